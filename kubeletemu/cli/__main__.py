import sys

from kubeletemu.cli import main

sys.exit(main())
