# Home Assistant 2026.10 makes `voluptuous` an alias of probatio when it starts
# (probatio.compat.install_as_voluptuous): the integration's `import voluptuous as vol` runs
# probatio there. scripts/lint gives mypy this stub on such a version so it checks the same.
from probatio import *  # noqa: F403
