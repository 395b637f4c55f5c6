// The stamp every JSON file under bench/results/ carries: commit, host, 1-minute load average at
// the start and end of the run, date (bench/stamp.py, which stamps the scripts' results, says
// what each field holds; scripts/check_bench_stamps.py checks every file has them).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace eth::bench {

// The 1-minute load average now: read it when the run starts.
double load_now();

// {commit, host, load: {start, end}, date}; the end load is read now.
nlohmann::json stamp(double load_at_start);

// Writes `result` and its stamp to `path`, making its folder; InputError when it cannot be opened.
void write_stamped(const std::string& path, nlohmann::json result, double load_at_start);

}  // namespace eth::bench
