"""Names of the files tqdeploy reads by default and writes into every build directory.

Import-light on purpose: command modules use them as option defaults, so `tqdeploy --help` loads this.
"""

SPEC_FILE_NAME = "tqdeploy.toml"  # the deployment spec: `init` writes it, `build` copies it into the build
