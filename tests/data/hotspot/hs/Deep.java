package hs;

// CPU-bound at a known Java depth (tests/bench/hotspot_bench.py): main
// calls recurse DEPTH - 1 times, then leaf, which spins until SECONDS of
// wall time have passed. A benchmark workload, not a ground truth: the
// bench compares profd's BPF time per sample of this JVM with a native
// program's of the same user depth (as profd answers both).
// Usage: hs.Deep SECONDS DEPTH
public final class Deep {
    static volatile long sink;

    static long leaf(long deadline) {
        long x = 1;
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 20_000; i++)
                x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static long recurse(int n, long deadline) {
        if (n > 1)
            return recurse(n - 1, deadline) + 1;
        return leaf(deadline);
    }

    public static void main(String[] args) {
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        sink = recurse(Integer.parseInt(args[1]), deadline);
    }
}
