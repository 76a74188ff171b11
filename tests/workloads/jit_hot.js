// JIT workload: nearly all of its CPU time goes to two JavaScript functions
// that V8 compiles into anonymous executable memory: hotLoopJS for the first
// two thirds of the run, then lateLoopJS, first called (so compiled, and
// added to the perf map) only then. Run as
//   node [--perf-basic-prof] jit_hot.js [SECONDS]
// With --perf-basic-prof, V8 names its code in /tmp/perf-PID.map, appending
// as it compiles. Prints {"pid":N,"seconds":S,"perf_map":true|false} when
// done. Used by tests/e2e/test_symbols.py.
'use strict';

// The clock is read once per 100000 steps of arithmetic, so the time spent
// in Date.now() (native code, not JIT) is a small share.
function hotLoopJS(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) {
    for (let i = 0; i < 100000; i++) x = (x * 31 + i) | 0;
  }
  return x;
}

function lateLoopJS(ms) {
  const end = Date.now() + ms;
  let x = 1;
  while (Date.now() < end) {
    for (let i = 0; i < 100000; i++) x = (x * 17 + i) | 0;
  }
  return x;
}

const arg = process.argv[2];
const seconds = arg === undefined ? 3 : Number(arg);
if (process.argv.length > 3 || !(seconds > 0)) {
  console.error('Usage: node [--perf-basic-prof] jit_hot.js [SECONDS]');
  process.exit(2);
}
hotLoopJS(seconds * 1000 * 2 / 3);
lateLoopJS(seconds * 1000 / 3);
console.log(JSON.stringify({
  pid: process.pid,
  seconds,
  perf_map: process.execArgv.includes('--perf-basic-prof'),
}));
