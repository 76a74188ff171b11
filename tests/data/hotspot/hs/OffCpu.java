package hs;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;

// Ground-truth off-CPU workload for HotSpot frames (tests/e2e/
// test_hotspot.py, issue 42): four threads block, each in one method, for
// a known time per round, and the workload reports how long each was in
// its method (System.nanoTime from its entry to its return):
//
//   hs.OffCpu.nap          Thread.sleep(BLOCK)
//   hs.OffCpu.awaitSignal  Object.wait until a signaller thread, which
//                          sleeps BLOCK between signals, notifies
//   hs.OffCpu.readByte     a blocking read of a loopback socket whose
//                          other end writes a byte every BLOCK
//   hs.OffCpu.enterLocked  a contended synchronized block, its monitor
//                          held BLOCK by a holder thread
//
// each under its own chain hs.Blocker.run;hs.OffCpu.LOOP;hs.OffCpu.METHOD.
// Every other wait (the helpers' sleeps, the rounds' barriers, the main
// thread's joins and hold) is in other methods, so a method's off-CPU time
// is what it measured.
//
// Truth: {"pid":N,"methods":{METHOD: blocked ns,...},
//         "chains":{METHOD: [outermost first],...},"tids":{METHOD: tid,...}}
// Usage: hs.OffCpu SECONDS WARMUP  (SECONDS of blocking per method, in
// rounds of BLOCK = 0.2 s, after WARMUP seconds of sleep on the main thread)
public final class OffCpu {
    static final long BLOCK_MS = 200;
    static final String[] METHODS = {"hs.OffCpu.nap", "hs.OffCpu.awaitSignal", "hs.OffCpu.readByte",
        "hs.OffCpu.enterLocked"};
    static final String[] LOOPS = {"hs.OffCpu.sleeperLoop", "hs.OffCpu.waiterLoop", "hs.OffCpu.readerLoop",
        "hs.OffCpu.contenderLoop"};
    static final long[] blocked = new long[4];
    static final long[] tids = new long[4];

    static final Object signalLock = new Object();
    static boolean signalled;
    static final Object monitor = new Object();

    static void nap() throws InterruptedException {
        long t0 = System.nanoTime();
        Thread.sleep(BLOCK_MS);
        blocked[0] += System.nanoTime() - t0;
    }

    static void awaitSignal() throws InterruptedException {
        long t0 = System.nanoTime();
        synchronized (signalLock) {
            while (!signalled)
                signalLock.wait();
            signalled = false;
        }
        blocked[1] += System.nanoTime() - t0;
    }

    static int readByte(InputStream in) throws java.io.IOException {
        long t0 = System.nanoTime();
        int b = in.read();
        blocked[2] += System.nanoTime() - t0;
        return b;
    }

    static void enterLocked() {
        long t0 = System.nanoTime();
        synchronized (monitor) {
            blocked[3] += System.nanoTime() - t0;
        }
    }

    // Each way of blocking once, on the main thread, before WARMUP: the JVM
    // loads the JDK's classes and native libraries (libnio) for them on
    // first use, and profd reads a library mapped then before it can walk
    // through it; the measured blocks come after, in their steady state.
    // The read blocks (its byte comes 50 ms later): a read whose byte is
    // already there never leaves the CPU, so profd would first walk
    // through libnio at the first measured block, and miss it there.
    static void warmUp(InputStream in, OutputStream out) throws Exception {
        Thread late = new Thread(() -> {
            try {
                Thread.sleep(50);
                out.write('w');
                out.flush();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        late.start();
        if (in.read() < 0)
            throw new java.io.EOFException("the loopback socket closed");
        late.join();
        synchronized (signalLock) {
            signalLock.wait(1);
        }
        Thread.sleep(1);
        CyclicBarrier one = new CyclicBarrier(1);
        one.await();
    }

    static void sleeperLoop(int rounds) throws InterruptedException {
        for (int i = 0; i < rounds; i++)
            nap();
    }

    static void waiterLoop(int rounds) throws InterruptedException {
        for (int i = 0; i < rounds; i++)
            awaitSignal();
    }

    static void readerLoop(int rounds, InputStream in) throws java.io.IOException {
        for (int i = 0; i < rounds; i++)
            if (readByte(in) < 0)
                throw new java.io.EOFException("the writer closed the socket");
    }

    static void contenderLoop(int rounds, CyclicBarrier barrier) throws Exception {
        for (int i = 0; i < rounds; i++) {
            contenderSync(barrier);
            contenderSync(barrier);
            enterLocked();
        }
    }

    static void contenderSync(CyclicBarrier barrier) throws Exception {
        barrier.await();
    }

    // The helpers: each waits BLOCK in a method of its own, then releases
    // the blocked thread.
    static void helperNap() throws InterruptedException {
        Thread.sleep(BLOCK_MS);
    }

    static void signallerLoop(int rounds) throws InterruptedException {
        for (int i = 0; i < rounds; i++) {
            helperNap();
            synchronized (signalLock) {
                signalled = true;
                signalLock.notify();
            }
        }
    }

    static void writerLoop(int rounds, OutputStream out) throws Exception {
        for (int i = 0; i < rounds; i++) {
            helperNap();
            out.write('x');
            out.flush();
        }
    }

    // Each round: both meet; the holder takes the monitor; both meet again
    // (the contender now knows it is held); the contender blocks on it while
    // the holder sleeps BLOCK, then leaves it.
    static void holderLoop(int rounds, CyclicBarrier barrier) throws Exception {
        for (int i = 0; i < rounds; i++) {
            holderSync(barrier);
            synchronized (monitor) {
                holderSync(barrier);
                helperNap();
            }
        }
    }

    static void holderSync(CyclicBarrier barrier) throws Exception {
        barrier.await();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2)
            throw new IllegalArgumentException("usage: hs.OffCpu SECONDS WARMUP");
        int rounds = (int) Math.max(1, Math.round(Double.parseDouble(args[0]) * 1000 / BLOCK_MS));
        InetAddress lo = InetAddress.getLoopbackAddress();
        try (ServerSocket server = new ServerSocket(0, 1, lo);
             Socket client = new Socket(lo, server.getLocalPort());
             Socket accepted = server.accept()) {
            InputStream in = client.getInputStream();
            OutputStream out = accepted.getOutputStream();
            warmUp(in, out);
            Thread.sleep((long) (Double.parseDouble(args[1]) * 1000));
            CyclicBarrier barrier = new CyclicBarrier(2);
            Blocker[] threads = {
                new Blocker("sleeper", 0, rounds, in, out, barrier),
                new Blocker("waiter", 1, rounds, in, out, barrier),
                new Blocker("reader", 2, rounds, in, out, barrier),
                new Blocker("contender", 3, rounds, in, out, barrier),
                new Blocker("signaller", 4, rounds, in, out, barrier),
                new Blocker("writer", 5, rounds, in, out, barrier),
                new Blocker("holder", 6, rounds, in, out, barrier),
            };
            for (Blocker t : threads)
                t.start();
            for (Blocker t : threads) {
                t.join();
                if (t.failed != null)
                    throw new IllegalStateException("thread " + t.getName() + " failed", t.failed);
            }
        }
        Map<String, Object> methods = new LinkedHashMap<>(), chains = new LinkedHashMap<>(),
                tidOf = new LinkedHashMap<>();
        for (int i = 0; i < METHODS.length; i++) {
            methods.put(METHODS[i], blocked[i]);
            tidOf.put(METHODS[i], tids[i]);
            chains.put(METHODS[i], java.util.List.of("hs.Blocker.run", LOOPS[i], METHODS[i]));
        }
        Map<String, Object> truth = new LinkedHashMap<>();
        truth.put("methods", methods);
        truth.put("chains", chains);
        truth.put("tids", tidOf);
        Gt.finish(truth);
    }
}

// A thread running one loop of OffCpu: roles 0 to 3 are the measured ones,
// which record their tid first; 4 to 6 the helpers.
final class Blocker extends Thread {
    final int role, rounds;
    final InputStream in;
    final OutputStream out;
    final CyclicBarrier barrier;
    volatile Throwable failed;

    Blocker(String name, int role, int rounds, InputStream in, OutputStream out, CyclicBarrier barrier) {
        super(name);
        this.role = role;
        this.rounds = rounds;
        this.in = in;
        this.out = out;
        this.barrier = barrier;
    }

    @Override
    public void run() {
        try {
            if (role < 4)
                OffCpu.tids[role] = Gt.tid();
            switch (role) {
            case 0: OffCpu.sleeperLoop(rounds); break;
            case 1: OffCpu.waiterLoop(rounds); break;
            case 2: OffCpu.readerLoop(rounds, in); break;
            case 3: OffCpu.contenderLoop(rounds, barrier); break;
            case 4: OffCpu.signallerLoop(rounds); break;
            case 5: OffCpu.writerLoop(rounds, out); break;
            default: OffCpu.holderLoop(rounds, barrier); break;
            }
        } catch (Throwable t) {
            failed = t;
        }
    }
}
