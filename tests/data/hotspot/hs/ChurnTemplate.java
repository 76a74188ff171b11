package hs;

import java.util.function.LongUnaryOperator;

// Defined again in a class loader of its own for each use (Churn.java):
// public, as a class of another loader's package hs is another runtime
// package, which may use only what is public.
public final class ChurnTemplate implements LongUnaryOperator {
    public ChurnTemplate() {
    }

    @Override
    public long applyAsLong(long x) {
        for (int i = 0; i < 100; i++)
            x = x * 2862933555777941757L + 3037000493L;
        return x;
    }
}
