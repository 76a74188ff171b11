package hs;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

// What a Java service does, for the daemon's figures with JVMs running
// (tests/bench/hotspot_bench.py): two threads handle requests (parse a
// query string into a map, render it sorted, match words with a regex,
// sum a list), each 20 ms asleep every 300 requests: on- and off-CPU,
// many methods of its own and of the JDK, compiled at every tier.
// Usage: hs.Service SECONDS
public final class Service {
    static final Pattern WORD = Pattern.compile("[a-z]+");
    static final String QUERY = "user=ada&role=admin&role=dev&id=12&items=1,2,3,4,5,6,7,8,9,10,11,12";
    static volatile long sink;

    static Map<String, List<String>> parse(String q) {
        Map<String, List<String>> m = new HashMap<>();
        for (String pair : q.split("&")) {
            int eq = pair.indexOf('=');
            m.computeIfAbsent(pair.substring(0, eq), k -> new ArrayList<>()).add(pair.substring(eq + 1));
        }
        return m;
    }

    static Map<String, List<String>> transform(Map<String, List<String>> m, int i) {
        m.put("i", List.of(Integer.toString(i)));
        List<String> items = new ArrayList<>();
        for (String s : m.get("items").get(0).split(","))
            items.add(Integer.toString(Integer.parseInt(s) * 2));
        m.put("items", items);
        return m;
    }

    static String render(Map<String, List<String>> m) {
        List<String> keys = new ArrayList<>(m.keySet());
        Collections.sort(keys);
        StringBuilder sb = new StringBuilder();
        for (String k : keys)
            sb.append(k).append(':').append(String.join("|", m.get(k))).append(';');
        return sb.toString();
    }

    static int count(String s) {
        int n = 0;
        for (Matcher mt = WORD.matcher(s); mt.find();)
            n++;
        return n;
    }

    static int handle(int i) {
        return count(render(transform(parse(QUERY), i)));
    }

    static void pause() throws InterruptedException {
        Thread.sleep(20);
    }

    static void serve(long deadline) throws InterruptedException {
        long sum = 0;
        for (int i = 0; System.nanoTime() < deadline; i++) {
            sum += handle(i);
            if (i % 300 == 299)
                pause();
        }
        sink = sum;
    }

    public static void main(String[] args) throws Exception {
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        Thread other = new Thread(() -> {
            try {
                serve(deadline);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "service-2");
        other.start();
        serve(deadline);
        other.join();
    }
}
