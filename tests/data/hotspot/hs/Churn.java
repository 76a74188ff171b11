package hs;

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongUnaryOperator;

// Code cache churn (tests/bench/hotspot_bench.py): for SECONDS, defines
// hs.ChurnTemplate again and again, each time in a class loader of its
// own (a new class each time, with new Methods), calls it until the JIT
// compiles it, and lets the loader go; a full GC every GC_EVERY classes
// unloads the classes dropped, and the JVM frees their compiled code. So
// Method* and code blobs are freed and their memory reused all the time.
// Prints {"pid":N,"classes":defined,"loaded":L,"unloaded":U,
// "code_cache_kb":{pool: used KiB}} at the end (the JVM's own counters).
// Usage: hs.Churn SECONDS
public final class Churn {
    static final int GC_EVERY = 200;
    static final int CALLS = 3000; // each call loops: C1 and then C2 take the method well within this
    static volatile long sink;

    static final class Loader extends ClassLoader {
        private final byte[] code;

        Loader(byte[] code) {
            super(Churn.class.getClassLoader());
            this.code = code;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.equals("hs.ChurnTemplate"))
                return super.loadClass(name, resolve);
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                return c != null ? c : defineClass(name, code, 0, code.length);
            }
        }
    }

    static long exercise(byte[] code, long x) throws Exception {
        LongUnaryOperator op = (LongUnaryOperator) new Loader(code).loadClass("hs.ChurnTemplate")
                .getDeclaredConstructor().newInstance();
        for (int i = 0; i < CALLS; i++)
            x = op.applyAsLong(x);
        return x;
    }

    public static void main(String[] args) throws Exception {
        byte[] code;
        try (InputStream in = Churn.class.getResourceAsStream("/hs/ChurnTemplate.class")) {
            code = in.readAllBytes();
        }
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9), x = 1;
        int classes = 0;
        while (System.nanoTime() < deadline) {
            x = exercise(code, x);
            if (++classes % GC_EVERY == 0)
                System.gc();
        }
        sink = x;
        System.gc();
        Map<String, Object> cache = new LinkedHashMap<>();
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans())
            if (p.getName().startsWith("CodeHeap") || p.getName().equals("CodeCache"))
                cache.put(p.getName(), p.getUsage().getUsed() / 1024);
        Map<String, Object> truth = new LinkedHashMap<>();
        truth.put("pid", Gt.pid());
        truth.put("classes", classes);
        truth.put("loaded", ManagementFactory.getClassLoadingMXBean().getTotalLoadedClassCount());
        truth.put("unloaded", ManagementFactory.getClassLoadingMXBean().getUnloadedClassCount());
        truth.put("code_cache_kb", cache);
        System.out.println(Gt.json(truth));
    }
}
