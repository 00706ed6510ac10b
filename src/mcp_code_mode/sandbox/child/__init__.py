"""Everything that runs on the far side of the pipe: inside a worker process or a Pyodide
runner. Stdlib only, and of this project only `sandbox.protocol` (an import-linter
contract); the Pyodide backend ships this folder whole.

The run loop (`worker`), the guest API (`guest_api`, `guest`), the guards and the audit
hook (`guest`, `audit`, `lockdown`), the zygote and its OS layers (`zygote`, `isolation`,
`seccomp`, `landlock`), the output mirror, and the Pyodide bridge (`pyodide_guest`).
"""

__all__: list[str] = []
