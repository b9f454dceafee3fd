"""`python -m planner` runs the CLI (`python -m planner --version` prints `spec-planner <version>`)."""

from .cli import main

if __name__ == "__main__":
    main()
