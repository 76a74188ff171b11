// Fixture of the symbolizer oracle test: C++ with templates, namespaces,
// classes, lambdas and the standard library's inlined templates, at -O2 -g,
// so names need demangling and inline chains run through libstdc++ headers.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

namespace geometry {

template <typename T>
struct point {
        T x, y;
        T norm2() const { return x * x + y * y; }
        point operator+(const point &o) const { return { x + o.x, y + o.y }; }
};

template <typename T>
T shoelace(const std::vector<point<T>> &poly) {
        T twice = 0;
        for (size_t i = 0; i < poly.size(); i++) {
                const point<T> &a = poly[i], &b = poly[(i + 1) % poly.size()];
                twice += a.x * b.y - b.x * a.y;
        }
        return twice / 2;
}

template <typename T>
point<T> centroid(const std::vector<point<T>> &pts) {
        point<T> sum = std::accumulate(pts.begin(), pts.end(), point<T>{ 0, 0 });
        return { sum.x / static_cast<T>(pts.size()), sum.y / static_cast<T>(pts.size()) };
}

} // namespace geometry

namespace inventory {
namespace detail {

inline std::string normalize(const std::string &s) {
        std::string out;
        for (char c : s)
                if (c != ' ')
                        out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        return out;
}

} // namespace detail

class registry {
public:
        void add(const std::string &name, int count) { items_[detail::normalize(name)] += count; }
        int get(const std::string &name) const {
                auto it = items_.find(detail::normalize(name));
                return it == items_.end() ? 0 : it->second;
        }
        template <typename F>
        void for_each_sorted(F f) const {
                std::vector<std::pair<std::string, int>> v(items_.begin(), items_.end());
                std::sort(v.begin(), v.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
                for (const auto &e : v)
                        f(e.first, e.second);
        }

private:
        std::map<std::string, int> items_;
};

} // namespace inventory

template <int N>
struct unroll {
        template <typename F>
        static void run(F &f) {
                unroll<N - 1>::run(f);
                f(N);
        }
};

template <>
struct unroll<0> {
        template <typename F>
        static void run(F &) {}
};

template <typename T>
__attribute__((noinline)) T sum_sorted(std::vector<T> v) {
        std::sort(v.begin(), v.end());
        return std::accumulate(v.begin(), v.end(), T{});
}

int main(int argc, char **argv) {
        std::vector<geometry::point<double>> poly{ { 0, 0 }, { 4, 0 }, { 4, 3 }, { 0, 3 + argc * 0.0 } };
        std::vector<geometry::point<int>> ipoly{ { 0, 0 }, { 2, 0 }, { 2, 2 }, { 0, argc + 1 } };
        inventory::registry reg;
        long total = 0;

        reg.add("Apple Pie", 3);
        reg.add("apple pie", 2);
        reg.add("Banana", argc);
        for (int i = 1; i < argc; i++)
                reg.add(argv[i], i);
        auto add = [&total](int k) { total += k * k; };
        unroll<6>::run(add);
        reg.for_each_sorted([&](const std::string &name, int n) { std::printf("%s %d\n", name.c_str(), n); });

        std::vector<long> longs{ 5, 3, 9, 1, argc };
        std::vector<double> doubles{ 2.5, 1.5, 0.5 };
        geometry::point<double> c = geometry::centroid(poly);
        std::printf("%g %d %g %g %ld %ld %g %d\n", geometry::shoelace(poly), geometry::shoelace(ipoly), c.x, c.y,
                    total, sum_sorted(longs), sum_sorted(doubles), reg.get("APPLE PIE"));
        return 0;
}
