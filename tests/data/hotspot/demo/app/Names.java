package demo.app;

public class Names {
    static final class Inner {
        static long twice(long x) {
            return x * 2;
        }
    }

    static long compute(int n) {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            sum += Inner.twice(i);
        }
        return sum;
    }

    // test-hotspot-names-jvm names the two methods above (lines 6, 11 to 15:
    // keep them where they are). "ready" once both classes are loaded.
    public static void main(String[] args) throws Exception {
        System.out.println("ready " + compute(10));
        System.out.flush();
        Thread.sleep(600_000);
    }
}
