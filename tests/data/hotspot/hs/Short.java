package hs;

import java.util.LinkedHashMap;
import java.util.Map;

// A short-lived JVM (tests/e2e/test_hotspot.py, issue 42): its main
// thread burns SECONDS of CPU in hs.Short.burn from its first moments,
// then sleeps SECONDS / 2 in hs.Short.nap, prints its truth and exits:
// whatever names its frames, on- and off-CPU, must have been read while it
// lived.
//
// Truth: {"pid":N,"tid":T,"burn_ns":B,"thread_cpu_ns":C,"nap_ns":S}: B the
// CPU of burn's calls, C the main thread's whole CPU (the JVM's start-up on
// this thread included), both from the thread's CPU clock; S nap's time
// (System.nanoTime from its entry to its return).
// Usage: hs.Short SECONDS
public final class Short {
    static volatile long sink;

    static long burn(long budgetNs) {
        long start = Gt.cpu(), x = 1;
        do {
            for (int i = 0; i < 20_000; i++)
                x = x * 6364136223846793005L + 1442695040888963407L;
        } while (Gt.cpu() - start < budgetNs);
        sink = x;
        return Gt.cpu() - start;
    }

    static long nap(long ms) throws InterruptedException {
        long t0 = System.nanoTime();
        Thread.sleep(ms);
        return System.nanoTime() - t0;
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        long used = burn((long) (seconds * 1e9));
        long napped = nap((long) (seconds * 500));
        Map<String, Object> truth = new LinkedHashMap<>();
        truth.put("tid", Gt.tid());
        truth.put("burn_ns", used);
        truth.put("thread_cpu_ns", Gt.cpu());
        truth.put("nap_ns", napped);
        truth.put("pid", Gt.pid());
        System.out.println(Gt.json(truth));
    }
}
