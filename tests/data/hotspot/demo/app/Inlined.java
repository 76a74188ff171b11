package demo.app;

public class Inlined {
    static int square(int x) {
        int[] box = { x * x };
        last = box;
        return box[0];
    }

    static long hot(int n) {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            sum += square(i) ^ (sum >>> 3);
        }
        return sum;
    }

    // square's box escapes here, so C2 allocates it and records square's
    // scope inlined in hot at the allocation's slow path; the JVM's default
    // GC polls for safepoints in hot's loop, in hot's own scope.
    static int[] last;

    // test-hotspot-code-jvm names hot's C2 code with square inlined at
    // line 13 (square's lines are 5 to 7, hot's 11 to 15: keep them where
    // they are). Runs two minutes at most, whoever forgets it.
    public static void main(String[] args) throws Exception {
        long total = 0, end = System.nanoTime() + 120_000_000_000L;
        System.out.println("ready");
        System.out.flush();
        while (System.nanoTime() < end)
            total += hot(10_000);
        System.out.println(total);
    }
}
