"""``python -m kubeletemu``: the ``kubeletemu`` command."""

import sys

from kubeletemu.cli import main

sys.exit(main())
