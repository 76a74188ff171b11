package hs;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.management.ObjectName;

// Ground-truth CPU workload for HotSpot frames (tests/e2e/test_hotspot.py,
// issue 42). A worker thread spends its CPU in three leaves under distinct
// call chains, 60/30/10 of the time:
//
//   hs.Worker.run;hs.Split.round;hs.Split.parse;hs.Split.tokenize
//   hs.Worker.run;hs.Split.round;hs.Split.render;hs.Split.paint(;hs.Pen.stroke)
//   hs.Worker.run;hs.Split.round;hs.Split.compress;hs.Split.checksum
//
// Phase a runs it on thread "split-a" after a warm-up on the main thread
// that gets every method of the chains compiled by C2 (thousands of calls
// each; the JVM's default flags). paint's loop calls Brush.stroke, of
// which hs.Pen is the only loaded subclass: C2 inlines Pen.stroke into
// paint (and whatever inlined paint) on that knowledge. Phase b first loads
// hs.Spray, a second Brush, and makes it the brush: the JVM deoptimizes
// what inlined Pen.stroke, paint runs interpreted, then is compiled again.
// Thread "split-b" then runs the same split with Spray.stroke: Pen.stroke
// never runs in phase b, and Spray.stroke never ran before it.
//
// Truth, one JSON line, then the JVM holds until stdin ends:
//   {"pid":N,"mode":"...","phases":{"a":{"tid":T,"thread_cpu_ns":C,
//     "leaves":{"hs.Split.tokenize":ns,...},"ran":["hs.Worker.run",...]},
//     "b":{...}},"nmethods":{"a":{METHOD:[[id,tier,state],...]},"b":{...}}}
// Each leaf's ns is the worker's CPU clock (ThreadMXBean) read around its
// call; thread_cpu_ns is the worker's whole CPU time, so a leaf's share of
// the thread's samples is ns / thread_cpu_ns. "ran" lists every method of
// package hs the worker thread ran. "nmethods" are the compiled methods
// of package hs in the code cache at the end of each phase (the JVM's own
// Compiler.codelist: compile id, tier (4 = C2), state), so the test knows
// the leaves were compiled by C2 and that phase b compiled again what it
// deoptimized.
//
// Usage: hs.Split SECONDS WARMUP_ROUNDS PHASES
//   SECONDS of worker CPU per phase, WARMUP_ROUNDS of the warm-up (each
//   calls every leaf once), PHASES "a" or "ab". With -Xint, WARMUP_ROUNDS
//   can be small: there is nothing to compile.
public final class Split {
    // 64-bit LCG steps, one multiplier and increment per leaf: each leaf's
    // loop is its own code, and C2 cannot fold the loop away.
    static final long MUL_T = 6364136223846793005L, ADD_T = 1442695040888963407L;
    static final long MUL_C = 3202034522624059733L, ADD_C = 4354685564936845319L;
    // Iterations of the warm-up's calls: small, so that thousands of calls
    // (what the tiers count before compiling) take well under a second.
    static final long WARM_UNIT = 200;
    // A unit of the measured rounds: about this much CPU (round takes ten).
    static final long UNIT_NS = 500_000;

    static volatile long sink;
    static Brush brush = new Pen();

    // tokenize and checksum are over C1's inlining limit (35 bytes of
    // bytecode: these are 36), so C1 compiles each on its own. Inlined into
    // round, a loop without a call or a debug point of its own (C1 puts
    // the loop's safepoint poll before its body) has no PcDesc between the
    // clock reads around it, so a sample in it could only be named after
    // the next debug point's scope (Gt.cpu): the JVM records nothing
    // finer, docs/architecture.md ("HotSpot names") says so. C2 still
    // inlines them (hot, under FreqInlineSize), whose chains are checked.
    static long tokenize(long n, long x) {
        for (long i = 0; i < n; i++)
            x = (x * MUL_T + ADD_T) ^ (x >>> 29);
        return x;
    }

    static long parse(long n, long x) {
        return tokenize(n, x) ^ 1;
    }

    static long paint(long n, long x) {
        Brush b = brush;
        for (long i = 0; i < n; i++)
            x = b.stroke(x);
        return x;
    }

    static long render(long n, long x) {
        return paint(n, x) ^ 2;
    }

    static long checksum(long n, long x) {
        for (long i = 0; i < n; i++)
            x = (x * MUL_C + ADD_C) ^ (x >>> 29);
        return x;
    }

    static long compress(long n, long x) {
        return checksum(n, x) ^ 3;
    }

    // One rotation, 6:3:1 units; used[i] += the CPU of leaf i's chain.
    static long round(long unit, long x, long[] used) {
        long t0 = Gt.cpu();
        x = parse(6 * unit, x);
        long t1 = Gt.cpu();
        x = render(3 * unit, x);
        long t2 = Gt.cpu();
        x = compress(unit, x);
        long t3 = Gt.cpu();
        used[0] += t1 - t0;
        used[1] += t2 - t1;
        used[2] += t3 - t2;
        return x;
    }

    static final String[] LEAVES = {"hs.Split.tokenize", "hs.Split.paint", "hs.Split.checksum"};

    // The hs methods the worker thread runs besides the brush's stroke.
    static final String[] WORKER_RAN = {"hs.Worker.run", "hs.Gt.tid", "hs.Gt.cpu", "hs.Split.round",
        "hs.Split.parse", "hs.Split.tokenize", "hs.Split.render", "hs.Split.paint", "hs.Split.compress",
        "hs.Split.checksum"};

    // Iterations of tokenize in about UNIT_NS of CPU, as this JVM runs it now.
    static long calibrate() {
        long n = 1000, x = 1;
        while (true) {
            long t0 = Gt.cpu();
            x = tokenize(n, x);
            long dt = Gt.cpu() - t0;
            if (dt >= 20_000_000 || n >= (1L << 40)) {
                sink = x;
                return Math.max(1, n * UNIT_NS / Math.max(dt, 1));
            }
            n *= 4;
        }
    }

    // The compiled methods of package hs the code cache holds:
    // {name: [[compile id, tier, state],...]}, state 0 in use, 1 not
    // entrant (deoptimized, its frames still running), from the JVM's
    // Compiler.codelist (the DiagnosticCommand MBean: no attach, no flag).
    // Lines: "ID TIER STATE hs.Split.paint(JJ)J [...]".
    static Map<String, Object> nmethods() throws Exception {
        ObjectName dcmd = new ObjectName("com.sun.management:type=DiagnosticCommand");
        String out = (String) ManagementFactory.getPlatformMBeanServer().invoke(dcmd, "compilerCodelist",
                new Object[] {new String[0]}, new String[] {String[].class.getName()});
        Map<String, Object> by = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            String[] f = line.trim().split(" ", 4);
            if (f.length < 4 || !f[3].startsWith("hs."))
                continue;
            String name = f[3].substring(0, f[3].indexOf('('));
            @SuppressWarnings("unchecked")
            List<Object> l = (List<Object>) by.computeIfAbsent(name, k -> new ArrayList<>());
            l.add(new long[] {Long.parseLong(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2])});
        }
        return by;
    }

    static Map<String, Object> runPhase(String name, double seconds, long unit, String stroke)
            throws InterruptedException {
        Worker w = new Worker("split-" + name, (long) (seconds * 1e9), unit);
        w.start();
        w.join();
        Map<String, Object> leaves = new LinkedHashMap<>();
        for (int i = 0; i < LEAVES.length; i++)
            leaves.put(LEAVES[i], w.used[i]);
        List<String> ran = new ArrayList<>(List.of(WORKER_RAN));
        ran.add(stroke);
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("tid", w.tid);
        p.put("thread_cpu_ns", w.cpuNs);
        p.put("leaves", leaves);
        p.put("ran", ran);
        return p;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3 || !(args[2].equals("a") || args[2].equals("ab")))
            throw new IllegalArgumentException("usage: hs.Split SECONDS WARMUP_ROUNDS a|ab");
        double seconds = Double.parseDouble(args[0]);
        long warmRounds = Long.parseLong(args[1]);
        long[] scratch = new long[3];
        long x = 1;
        for (long i = 0; i < warmRounds; i++)
            x = round(WARM_UNIT, x, scratch);
        sink = x;
        long unit = calibrate();

        Map<String, Object> truth = new LinkedHashMap<>();
        Map<String, Object> phases = new LinkedHashMap<>();
        Map<String, Object> compiled = new LinkedHashMap<>();
        truth.put("unit", unit);
        truth.put("phases", phases);
        truth.put("nmethods", compiled);
        phases.put("a", runPhase("a", seconds, unit, "hs.Pen.stroke"));
        compiled.put("a", nmethods());
        if (args[2].equals("ab")) {
            // by name: a reference in this class's code would have the
            // verifier load Spray before phase a
            brush = (Brush) Class.forName("hs.Spray").getDeclaredConstructor().newInstance();
            phases.put("b", runPhase("b", seconds, unit, "hs.Spray.stroke"));
            compiled.put("b", nmethods());
        }
        Gt.finish(truth);
    }
}

abstract class Brush {
    abstract long stroke(long x);
}

final class Pen extends Brush {
    @Override
    long stroke(long x) {
        return x * 2862933555777941757L + 3037000493L;
    }
}

final class Spray extends Brush {
    @Override
    long stroke(long x) {
        return (x ^ (x >>> 29)) * -4658895280553007687L + 7;
    }
}

// The measured thread: rounds of the split until it has used its budget of
// CPU. Its run is the outermost Java frame of every sample of its thread.
final class Worker extends Thread {
    final long budgetNs, unit;
    final long[] used = new long[3];
    volatile long tid, cpuNs;

    Worker(String name, long budgetNs, long unit) {
        super(name);
        this.budgetNs = budgetNs;
        this.unit = unit;
    }

    @Override
    public void run() {
        tid = Gt.tid();
        long x = 7, r = 1, start = Gt.cpu();
        // Each round's unit drawn from 0.5-1.5 units (an LCG, inline: no
        // call of its own on the worker's stacks). Rounds of one fixed
        // length (about 5 ms) beat against the sampler's period (1.003 ms at
        // 997 Hz): for seconds the samples fall at the same points of the
        // rotation, and shares strayed by up to twice their binomial error.
        while (Gt.cpu() - start < budgetNs) {
            r = r * Split.MUL_T + Split.ADD_T;
            x = Split.round(unit / 2 + (r >>> 11) % unit, x, used);
        }
        Split.sink = x;
        cpuNs = Gt.cpu();
    }
}
