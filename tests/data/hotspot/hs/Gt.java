package hs;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

// What the Java ground-truth workloads share (tests/e2e/test_hotspot.py):
// the thread's CPU clock, its kernel thread id, their truth as one JSON
// line on stdout, and the hold after it. Nothing here is measured: the
// methods under test are in the workloads.
final class Gt {
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    private Gt() {
    }

    // This thread's CPU time so far, ns (ThreadMXBean: CLOCK_THREAD_CPUTIME_ID).
    static long cpu() {
        return MX.getCurrentThreadCpuTime();
    }

    // This thread's id as the kernel numbers it (what profctl --tid takes):
    // /proc/thread-self links to PID/task/TID.
    static long tid() {
        try {
            String link = Files.readSymbolicLink(Path.of("/proc/thread-self")).toString();
            return Long.parseLong(link.substring(link.lastIndexOf('/') + 1));
        } catch (Exception e) {
            throw new IllegalStateException("cannot read /proc/thread-self", e);
        }
    }

    static long pid() {
        return ProcessHandle.current().pid();
    }

    // A JSON value: a Map (string keys), a String, a Number, a Boolean, an
    // Iterable or an array of long.
    static String json(Object v) {
        StringBuilder sb = new StringBuilder();
        write(sb, v);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object v) {
        if (v instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first)
                    sb.append(',');
                first = false;
                write(sb, e.getKey().toString());
                sb.append(':');
                write(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Iterable) {
            sb.append('[');
            boolean first = true;
            for (Object x : (Iterable<?>) v) {
                if (!first)
                    sb.append(',');
                first = false;
                write(sb, x);
            }
            sb.append(']');
        } else if (v instanceof long[]) {
            sb.append('[');
            long[] a = (long[]) v;
            for (int i = 0; i < a.length; i++)
                sb.append(i > 0 ? "," : "").append(a[i]);
            sb.append(']');
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v == null) {
            sb.append("null");
        } else {
            sb.append('"');
            for (char c : v.toString().toCharArray()) {
                if (c == '"' || c == '\\')
                    sb.append('\\').append(c);
                else if (c < 0x20)
                    sb.append(String.format("\\u%04x", (int) c));
                else
                    sb.append(c);
            }
            sb.append('"');
        }
    }

    // Prints the truth, then holds until stdin ends (at once for
    // /dev/null): a test holding the pipe keeps the JVM alive while it
    // asks profd, as the C and Python workloads do.
    static void finish(Map<String, Object> truth) throws Exception {
        truth.put("pid", pid());
        System.out.println(json(truth));
        System.out.flush();
        while (System.in.read() >= 0) {
        }
    }
}
