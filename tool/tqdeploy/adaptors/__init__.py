"""Heavy SDKs, each behind one adaptor module that imports it inside its functions (SkyPilot's sky/adaptors/).

A module that needs an SDK imports its adaptor at the top: the header says what it uses, and `tqdeploy --help`
never loads the SDK itself.
"""
