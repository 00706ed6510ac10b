// The Pyodide runner: one Deno process, one Pyodide interpreter, many guest runs, each
// from the same fresh state.
//
//   deno run --allow-read=<pyodide dir> ... pyodide_runner.mjs <pyodide dir> [<snapshot>]
//
// Speaks the worker protocol on stdin/stdout (JSON lines): `init` (the guest runtime's
// Python sources, the allowed imports, a token) -> `ready`; then, over and over, one `run`
// -> `call`/`query` requests answered by `reply` lines -> `done`, and `reset` -> `ready`
// again (or `retired`, and the process exits). A first `run` with `"session": true` starts a
// session instead: later session runs continue from its state, and the runner is never
// reset (the host disposes of it when the session ends). Nothing is fetched from the network: Pyodide
// loads from the local npm directory, and Deno grants read access to it only (no env, net,
// write or run). Python's stdout/stderr never reach the protocol.
//
// Python talks to the host through two character devices of Pyodide's file system, not
// through Pyodide's JavaScript FFI: `/dev/mcp_host` carries protocol lines (a read blocks
// on stdin, so `tools.x.y(...)` stays a plain call inside Wasm) and `/dev/mcp_timer` arms
// the run's time limit. A run that keeps to Python therefore never calls the FFI, which
// is what makes the reset below sound.
//
// Reset: at `ready`, the runner copies Wasm linear memory (all of Python's state: globals,
// modules, builtins, the allocator), the stack pointer, and a fingerprint of the JS-side
// file system. `reset` writes the copy back and zeroes what memory grew by, which is as
// fresh as a new process for anything Python can reach. It refuses (`retired`: the host
// kills the process and starts another) when the run left state the copy does not cover:
// - the run called Pyodide's JS FFI beyond a plain run's own calls (guest code that
//   reached `js`, a JsProxy, asyncio's WebLoop, ctypes, dlopen, sockets, timers): JS-side
//   state (globals, prototypes, pending callbacks into Python) could outlive the memory
//   copy, so such a runner is never reused;
// - files, directories or descriptors of the file system changed;
// - memory or the JS heap grew by more than `MAX_GROWTH_BYTES`, or it served `max_runs`.
// `ready` carries the token from `init`, and only the watchdog (a worker thread: its own JS
// realm, which no guest code reaches) holds it and writes `ready`, after checking the call
// counters itself (shared memory only the counting wrappers write, by plain increments).
// Guest code that forges `done`, or JS it planted that rewrites this realm, cannot forge the
// `ready` that makes the host hand this runner another run. Never in Python's memory; the
// bytes of `init` are zeroed once read.
const dir = Deno.args[0];
// Web storage is kept on disk by Deno without any `--allow-write` (under HOME's cache, shared
// by every runner): JS a run reached could leave data there for a later run (outside attack
// 13). No runner has it.
for (const name of ["localStorage", "sessionStorage", "caches"]) delete globalThis[name];
// Taken before any guest code runs: a run that reached JS can redefine `Deno.exit`, and
// the runner must still be able to end itself after such a run (see `retireNow`).
const EXIT = Deno.exit;
const { loadPyodide } = await import(`${dir}/pyodide.mjs`);

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const EMPTY = new Uint8Array(0);
const MAX_GROWTH_BYTES = 64 * 1024 * 1024;

let head = EMPTY; // bytes read from stdin and not consumed yet
const chunk = new Uint8Array(1 << 16);

/** The next line from the host, with its "\n", as bytes; exits when the host is gone. */
function readRawLine() {
  const parts = [];
  let size = 0;
  for (;;) {
    const end = head.indexOf(10);
    if (end >= 0) {
      parts.push(head.subarray(0, end + 1));
      head = head.subarray(end + 1);
      return concat(parts, size + end + 1);
    }
    parts.push(head);
    size += head.length;
    const n = Deno.stdin.readSync(chunk);
    if (n === null) Deno.exit(0); // the host is gone
    head = chunk.slice(0, n);
  }
}

function concat(parts, size) {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function readLine() {
  const bytes = readRawLine();
  return decoder.decode(bytes.subarray(0, bytes.length - 1));
}

function writeBytes(bytes) {
  for (let offset = 0; offset < bytes.length;) offset += Deno.stdout.writeSync(bytes.subarray(offset));
}

function writeLine(text) {
  writeBytes(encoder.encode(text + "\n"));
}

// Modes: `<dir> --make-snapshot <file>` loads Pyodide, imports the guest runtime and the
// allowed modules, and writes a memory snapshot; `<dir> <file>` starts from that snapshot
// (about 5x faster than a plain load); `<dir>` alone loads from scratch.
const [, second, third] = Deno.args;
const making = second === "--make-snapshot";
const snapshotPath = making ? third : second;

const init = JSON.parse(readLine());
let token = String(init.token ?? ""); // handed to the watchdog, then dropped here
delete init.token;
chunk.fill(0); // the tail of `init` would stay behind shorter lines read into it later
const maxRuns = Number(init.max_runs ?? 0);

// Count every call from Wasm into Pyodide's JS imports, except the hot ones that only do
// file I/O, time, memory and signal checks (what file I/O changes is checked at reset). A
// run that keeps to Python makes the same calls every time (entering and leaving
// `run_next`); anything beyond is contact with JS. Sockets and pipes keep JS-side state
// and counters, so they count; so do the ioctls that set terminal state.
const UNCOUNTED = new RegExp(
  "^(__syscall_(?!socket|connect|bind|listen|accept4|getpeername|getsockname|getsockopt|" +
    "sendto|recvfrom|sendmsg|recvmsg|pipe|ioctl)|_PyEM_|_Py_CheckEmscriptenSignals_Helper$|" +
    "emscripten_(date_now|get_now|get_heap_max|resize_heap)$|" +
    "_(mmap|munmap|msync|tzset|localtime|gmtime|mktime|timegm)_js$|" +
    "_emscripten_get_progname$|_abort_js$|__assert_fail$)",
);
const SETTING_IOCTLS = new Set([21506, 21507, 21508, 21520, 21524]); // TCSETS*, TIOCS*
const counted = [];
let calls = new Float64Array(0); // shared with the watchdog; never wraps around
let memory = null;
let stackPointer = null;
const instantiate = WebAssembly.instantiate;
WebAssembly.instantiate = function (source, imports) {
  if (imports?.env?.memory instanceof WebAssembly.Memory) imports = instrument(imports);
  return instantiate.call(this, source, imports);
};

function instrument(imports) {
  const env = { ...imports.env };
  memory = env.memory;
  stackPointer = env.__stack_pointer;
  for (const [name, original] of Object.entries(env)) {
    if (typeof original !== "function" || UNCOUNTED.test(name)) continue;
    const slot = counted.push(name) - 1;
    const counts = name === "__syscall_ioctl" ? (args) => SETTING_IOCTLS.has(args[1]) : () => true;
    const wrapper = function (...args) {
      if (counts(args)) calls[slot]++;
      return original.apply(this, args);
    };
    for (const key of Object.keys(original)) wrapper[key] = original[key]; // e.g. `.sig`
    env[name] = wrapper;
  }
  calls = new Float64Array(new SharedArrayBuffer(8 * Math.max(1, counted.length)));
  return { ...imports, env };
}

const options = { indexURL: `${dir}/`, stdout: () => {}, stderr: () => {} };
if (making) options._makeSnapshot = true;
else if (snapshotPath) options._loadSnapshot = Deno.readFileSync(snapshotPath);
const pyodide = await loadPyodide(options);
WebAssembly.instantiate = instantiate;
if (!memory || !stackPointer) throw new Error("Pyodide's Wasm memory was not found");

if (!snapshotPath || making) {
  for (const [path, source] of Object.entries(init.files)) {
    pyodide.FS.mkdirTree(path.split("/").slice(0, -1).join("/"));
    pyodide.FS.writeFile(path, source);
  }
  // Only what Python needs: the token must never be in Python's memory.
  const setup = { root: init.root, wheels: init.wheels, allowed_imports: init.allowed_imports };
  pyodide.globals.set("_init", pyodide.toPy(setup));
  pyodide.runPython(`
import sys
sys.path.insert(0, _init["root"])
import mcp_code_mode.sandbox.child.pyodide_guest as _guest
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
// `armed` holds the generation of the armed timer (0: none). Whoever swaps it to 0 first
// wins: the watchdog then interrupts, or the runner disarms, and a late timer can never
// interrupt a later run.
const WATCHDOG = `let timer;
let token = "", pid = 0, calls = null, perRun = null, expected = null, tainted = false;
const encoder = new TextEncoder();
function say(message) { // this realm's own stdout: nothing of the runner's realm is used
  const bytes = encoder.encode(JSON.stringify(message) + "\\n");
  for (let offset = 0; offset < bytes.length;) offset += Deno.stdout.writeSync(bytes.subarray(offset));
}
// Ready again only if every counter grew by exactly a plain run's calls since the last time.
function verdict() {
  for (let i = 0; i < perRun.length; i++) if (calls[i] - expected[i] !== perRun[i]) tainted = true;
  if (tainted) return say({ op: "retired", reason: "the run called into JavaScript" });
  for (let i = 0; i < perRun.length; i++) expected[i] = calls[i];
  say({ op: "ready", pid, token });
}
self.onmessage = ({ data }) => {
  if (data[0] === "init") {
    [, token, pid, calls, perRun] = data;
    expected = new Float64Array(perRun.length);
    for (let i = 0; i < perRun.length; i++) expected[i] = calls[i];
    return say({ op: "ready", pid, token });
  }
  if (data === "reset") return verdict();
  const [interrupt, armed, generation, ms] = data;
  clearTimeout(timer);
  timer = setTimeout(() => {
    if (Atomics.compareExchange(armed, 0, generation, 0) === generation) {
      Atomics.store(interrupt, 0, 2);
    }
  }, ms);
};`;
const interrupt = new Int32Array(new SharedArrayBuffer(4));
const armed = new Int32Array(new SharedArrayBuffer(4));
pyodide.setInterruptBuffer(interrupt);
const watchdog = new Worker(
  URL.createObjectURL(new Blob([WATCHDOG], { type: "text/javascript" })),
  { type: "module" },
);
let generation = 0;
let pendingTimer = 0; // the generation this runner armed and has not disarmed
let timerFired = false; // since the last reset
function armTimer(ms) {
  if (pendingTimer && Atomics.compareExchange(armed, 0, pendingTimer, 0) !== pendingTimer) {
    timerFired = true;
  }
  pendingTimer = 0;
  if (ms > 0) {
    generation = (generation % 0x7fffffff) + 1;
    pendingTimer = generation;
    Atomics.store(armed, 0, generation);
    watchdog.postMessage([interrupt, armed, generation, ms]);
  }
}

// The devices between Python and the host (see the top of this file).
let inbox = EMPTY; // what `/dev/mcp_host` reads next
let sink = writeBytes; // where `/dev/mcp_host` writes go
const { FS } = pyodide;
const heapBytes = (buffer, offset, length) => new Uint8Array(buffer.buffer, buffer.byteOffset + offset, length);
FS.registerDevice(FS.makedev(64, 0), {
  read(stream, buffer, offset, length) {
    if (!inbox.length) inbox = readRawLine();
    const n = Math.min(length, inbox.length);
    heapBytes(buffer, offset, n).set(inbox.subarray(0, n));
    inbox = inbox.subarray(n);
    return n;
  },
  write(stream, buffer, offset, length) {
    sink(heapBytes(buffer, offset, length));
    return length;
  },
});
FS.registerDevice(FS.makedev(64, 1), {
  read: () => 0,
  write(stream, buffer, offset, length) {
    armTimer(Number(decoder.decode(heapBytes(buffer, offset, length).slice())));
    return length;
  },
});
FS.mkdev("/dev/mcp_host", 0o600, FS.makedev(64, 0));
FS.mkdev("/dev/mcp_timer", 0o200, FS.makedev(64, 1));

const guest = pyodide.runPython(`
import mcp_code_mode.sandbox.child.pyodide_guest as _guest
_guest.attach()
_guest
`);
const runNext = guest.run_next;
// callPromising lets asyncio.run (top-level await) switch stacks with JSPI.
const runOne = runNext.callPromising ? () => runNext.callPromising() : async () => runNext();

// Two warm-up runs: the first pays for first-time work, the second gives the calls into
// JS a plain run makes. Then the state every run starts from is taken.
const WARM_UP = JSON.stringify({
  op: "run", code: "_ = [1 + 1]\n_", input: null, index: {}, timeout_s: 60,
  max_output_chars: 1000, seed: 0,
});
sink = () => {};
for (let i = 0; i < 2; i++) {
  calls.fill(0);
  inbox = encoder.encode(WARM_UP + "\n");
  await runOne();
}
const plainCalls = Float64Array.from(calls);
const COUNTED_CALLS = calls.length; // read now: a run that reached JS could redefine `length`
const since = new Float64Array(COUNTED_CALLS); // the counters at the last fresh state
guest.settle();
armTimer(0);
timerFired = false;
Atomics.store(interrupt, 0, 0);
calls.fill(0);
sink = writeBytes;
const fresh = {
  memory: new Uint8Array(memory.buffer).slice(),
  stackPointer: stackPointer.value,
  files: fileState(),
  streams: FS.streams.map((stream) => stream && [stream, stream.flags, stream.position]),
  nextInode: FS.nextInode,
  cwd: FS.cwd(),
  heapBytes: Deno.memoryUsage().heapUsed,
};

/** Every node of the file system, with what a write, create or delete changes; not what
 * /proc/self/fd holds (the open descriptors: they change as any run reads a file). /proc
 * itself counts: its directories are writable, in memory (outside attack 14 left a file in
 * /proc/self that the next run read). */
function fileState() {
  const nodes = new Map();
  const visit = (node, path) => {
    if (FS.isMountpoint(node)) node = node.mounted.root;
    const { mode } = node;
    const entry = [node, mode, node.rdev, node.link, node.atime, node.mtime, node.ctime];
    if (FS.isFile(mode)) entry.push(node.contents, node.usedBytes);
    nodes.set(path, entry);
    if (!FS.isDir(mode) || path === "/proc/self/fd") return;
    for (const name of node.node_ops.readdir(node)) {
      if (name !== "." && name !== "..") visit(FS.lookupNode(node, name), `${path}/${name}`);
    }
  };
  visit(FS.root, "");
  return nodes;
}

function sameFiles() {
  const now = fileState();
  if (now.size !== fresh.files.size) return false;
  for (const [path, entry] of now) {
    const before = fresh.files.get(path);
    if (!before || before.length !== entry.length || before.some((v, i) => v !== entry[i])) {
      return false;
    }
  }
  return true;
}

/** Whether the run called into JS beyond a plain run's calls. Decided first at a reset and
 * with nothing a run that reached JS could have redefined (a method, a getter such as a
 * typed array's `length`, a global): only a loop, typed-array elements and `!==`. */
function reachedJs() {
  for (let i = 0; i < COUNTED_CALLS; i++) if (calls[i] - since[i] !== plainCalls[i]) return true;
  return false;
}

/** End a runner whose run reached JS, its `done` written: nothing the run could have
 * redefined (globals, prototypes, `Deno.stdout`) may run first, so no `retired` line and
 * no read of the host's next message. If even the exit taken at start-up fails, spin:
 * the host kills a runner that does not answer its reset in time. */
function retireNow() {
  try {
    EXIT(0);
  } catch {
    // fall through
  }
  for (;;);
}

/** Why this runner cannot serve another run, or "" once its state is fresh again. */
function reset(runs) {
  if (reachedJs()) return "the run called into JavaScript";
  armTimer(0);
  if (timerFired) return "the run reached its time limit";
  if (maxRuns && runs >= maxRuns) return `it served ${runs} runs`;
  if (!sameFiles()) return "the run changed the file system";
  for (let fd = 0; fd < Math.max(FS.streams.length, fresh.streams.length); fd++) {
    const stream = FS.streams[fd] ?? null;
    const [before, flags, position] = fresh.streams[fd] ?? [null];
    if (stream !== before) {
      if (before || !stream) return "the run closed or replaced a file descriptor of the runner";
      try {
        FS.close(stream); // left open by the run: Python's restored memory knows nothing of it
      } catch {
        return "the run left a file descriptor that does not close";
      }
    } else if (stream) {
      if (stream.flags !== flags) return "the run changed the flags of a file descriptor";
      stream.position = position; // a device's, moved by reading and writing
    }
  }
  FS.nextInode = fresh.nextInode; // nodes made since are all gone (checked above)
  if (FS.cwd() !== fresh.cwd) FS.chdir(fresh.cwd);
  const grown = memory.buffer.byteLength - fresh.memory.length;
  if (grown > MAX_GROWTH_BYTES) return `its memory grew by ${grown >> 20} MiB`;
  if (Deno.memoryUsage().heapUsed - fresh.heapBytes > MAX_GROWTH_BYTES) return "its JS heap grew";
  const heap = new Uint8Array(memory.buffer);
  heap.set(fresh.memory);
  if (grown > 0) heap.fill(0, fresh.memory.length);
  stackPointer.value = fresh.stackPointer;
  Atomics.store(interrupt, 0, 0);
  for (let i = 0; i < COUNTED_CALLS; i++) since[i] = calls[i];
  return "";
}

// The index of tools is sent again only when it changed: a run without one gets the last.
let lastIndex = null;
function withIndex(line, message) {
  if (Object.hasOwn(message, "index")) {
    lastIndex = JSON.stringify(message.index);
    return line;
  }
  if (lastIndex === null) return line; // the guest runtime reports the missing index
  return `${line.slice(0, line.lastIndexOf("}"))},"index":${lastIndex}}`;
}

watchdog.postMessage(["init", token, Deno.pid, calls, plainCalls]); // it says `ready`
token = "";
let runs = 0;
let dirty = false;
let session = false; // the runs since the last reset are one session's (never reset after)
for (;;) {
  const line = readLine();
  const message = JSON.parse(line);
  if (message.op === "run" && (!dirty || (session && message.session === true))) {
    if (!dirty) session = message.session === true;
    dirty = true;
    runs += 1;
    inbox = encoder.encode(withIndex(line, message) + "\n");
    await runOne(); // Python reads the run from /dev/mcp_host and writes `done` there
    if (!session && reachedJs()) retireNow(); // before reading anything more from the host
  } else if (message.op === "reset" && dirty && !session) {
    const reason = reset(runs);
    if (reason) {
      writeLine(JSON.stringify({ op: "retired", reason }));
      Deno.exit(0);
    }
    dirty = false;
    watchdog.postMessage("reset"); // the watchdog says `ready`, or `retired`
  } else {
    Deno.exit(3); // out of protocol: the host discards this runner
  }
}
