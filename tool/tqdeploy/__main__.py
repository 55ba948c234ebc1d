from tqdeploy.entry import main

raise SystemExit(main())
