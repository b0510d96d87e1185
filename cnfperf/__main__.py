import sys

from cnfperf.cli import main

sys.exit(main())
