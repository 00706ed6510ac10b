// The Pyodide runner: one Deno process, one Pyodide interpreter, one guest run.
//
//   deno run --allow-read=<pyodide dir> ... pyodide_runner.mjs <pyodide dir>
//
// Speaks the worker protocol on stdin/stdout (JSON lines): `init` (the guest runtime's
// Python sources and the allowed imports) -> `ready`; one `run` -> `call`/`query` requests
// answered by `reply` lines -> `done`. Guest tool calls block on a synchronous read of
// stdin, so `tools.x.y(...)` stays a plain call inside Wasm. Nothing is fetched from the
// network: Pyodide loads from the local npm directory, and Deno grants read access to it
// only (no env, net, write or run). Python's stdout/stderr never reach the protocol.
const dir = Deno.args[0];
const { loadPyodide } = await import(`${dir}/pyodide.mjs`);

const encoder = new TextEncoder();
const decoder = new TextDecoder();
let pending = new Uint8Array(0);

function readLine() {
  for (;;) {
    const end = pending.indexOf(10);
    if (end >= 0) {
      const line = decoder.decode(pending.subarray(0, end));
      pending = pending.slice(end + 1);
      return line;
    }
    const chunk = new Uint8Array(1 << 16);
    const n = Deno.stdin.readSync(chunk);
    if (n === null) Deno.exit(0); // the host is gone
    const grown = new Uint8Array(pending.length + n);
    grown.set(pending);
    grown.set(chunk.subarray(0, n), pending.length);
    pending = grown;
  }
}

function writeLine(text) {
  const bytes = encoder.encode(text + "\n");
  for (let offset = 0; offset < bytes.length;) offset += Deno.stdout.writeSync(bytes.subarray(offset));
}

// Modes: `<dir> --make-snapshot <file>` loads Pyodide, imports the guest runtime and the
// allowed modules, and writes a memory snapshot; `<dir> <file>` starts from that snapshot
// (about 5x faster than a plain load); `<dir>` alone loads from scratch.
const [, second, third] = Deno.args;
const making = second === "--make-snapshot";
const snapshotPath = making ? third : second;

const init = JSON.parse(readLine());
const options = { indexURL: `${dir}/`, stdout: () => {}, stderr: () => {} };
if (making) options._makeSnapshot = true;
else if (snapshotPath) options._loadSnapshot = Deno.readFileSync(snapshotPath);
const pyodide = await loadPyodide(options);

if (!snapshotPath || making) {
  for (const [path, source] of Object.entries(init.files)) {
    pyodide.FS.mkdirTree(path.split("/").slice(0, -1).join("/"));
    pyodide.FS.writeFile(path, source);
  }
  pyodide.globals.set("_init", pyodide.toPy(init));
  pyodide.runPython(`
import sys
sys.path.insert(0, _init["root"])
import mcp_code_mode.sandbox.pyodide_guest as _guest
_guest.install_wheels(_init.get("wheels") or {})
_guest.preload(_init["allowed_imports"])
del _init, _guest
`);
}
if (making) {
  Deno.writeFileSync(snapshotPath, pyodide.makeMemorySnapshot());
  writeLine(JSON.stringify({ op: "snapshot", path: snapshotPath }));
  Deno.exit(0);
}
// The run's own time limit. Python runs on this thread, so a watchdog thread keeps the
// clock: when the limit passes it writes SIGINT into Pyodide's interrupt buffer, which the
// interpreter polls between bytecodes; worker.py turns that signal into a TIMEOUT that keeps
// the run's stdout. A long C call polls nothing: the host kills the process then.
const WATCHDOG = `let timer;
self.onmessage = ({ data: [interrupt, armed, ms] }) => {
  clearTimeout(timer);
  timer = setTimeout(() => { if (Atomics.load(armed, 0)) Atomics.store(interrupt, 0, 2); }, ms);
};`;
const interrupt = new Int32Array(new SharedArrayBuffer(4));
const armed = new Int32Array(new SharedArrayBuffer(4)); // disarming needs no message
pyodide.setInterruptBuffer(interrupt);
const watchdog = new Worker(
  URL.createObjectURL(new Blob([WATCHDOG], { type: "text/javascript" })),
  { type: "module" },
);
function armTimer(ms) {
  Atomics.store(armed, 0, ms > 0 ? 1 : 0);
  if (ms > 0) watchdog.postMessage([interrupt, armed, ms]);
}
pyodide.registerJsModule("_mcp_host", {
  exchange: (line) => { if (line) writeLine(line); return readLine(); },
  arm_timer: armTimer,
});
const guest = pyodide.runPython(`
import mcp_code_mode.sandbox.pyodide_guest as _guest
_guest.attach()
_guest
`);
const runOne = guest.run_line;
writeLine(JSON.stringify({ op: "ready", pid: Deno.pid }));
// callPromising lets asyncio.run (top-level await) switch stacks with JSPI.
const line = readLine();
writeLine(runOne.callPromising ? await runOne.callPromising(line) : runOne(line));
Deno.exit(0);
