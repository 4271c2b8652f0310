from rankguard.cli import main

raise SystemExit(main())
