"""Renderers: findings and reports as SARIF, Markdown, HTML."""
