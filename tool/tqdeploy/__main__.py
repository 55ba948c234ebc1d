from tqdeploy.cli import main

raise SystemExit(main())
