"""libcst codemods that repair what rankguard reports (`rankguard fix ...`)."""
