from platobench.cli import main

raise SystemExit(main())
