from rankguard.cli import entry

entry()
