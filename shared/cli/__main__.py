"""``python -m cerfleet.cli``: the same as the ``cerfleet`` console script."""

from cerfleet.cli.main import main

raise SystemExit(main())
