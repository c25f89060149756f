"""``python -m wield.cli``: the same as the ``wield`` command."""

import sys

from wield.cli.main import main

sys.exit(main())
