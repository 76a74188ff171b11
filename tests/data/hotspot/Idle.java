// A JVM for the VM-structs tests to read: says "ready" once main runs
// (its tables and code cache are set up by then), then waits to be killed.
public class Idle {
    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(600_000);
    }
}
