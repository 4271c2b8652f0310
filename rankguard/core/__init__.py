"""The bottom layer: findings, fingerprints, chains, errors and config, which every layer uses."""
