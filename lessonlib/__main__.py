"""``python -m lessonlib COMMAND``: the package's command line (``lessonlib.cli``)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
