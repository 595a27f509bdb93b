#pragma once
// Parsing and printing of byte counts and durations as users type them
// ("64M", "1KiB", "30s"). Pure functions.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtbench {

// Parses "1024", "1K", "4KB", "4KiB", "64M", "1G" (binary multiples: K = 1024).
// Throws UsageError naming `what` on anything else, negatives included.
std::uint64_t parse_bytes(const std::string& text, const std::string& what);

// Parses "30", "30s", "500ms", "2m" into milliseconds (a bare number is
// seconds). Throws UsageError on negative, zero or malformed values.
std::chrono::milliseconds parse_duration(const std::string& text, const std::string& what);

// Parses a link rate into bytes per second, decimal units as networks are
// sold: "100Gbit/s", "100Gb/s" (bits), "12.5GB/s", "800MB/s" (bytes),
// "400Gbit" (the "/s" may be left out); an optional "Nx" prefix multiplies
// ("4x100Gbit/s": four NICs). Throws UsageError naming `what` for a missing
// or unknown unit, zero or a negative rate.
double parse_bandwidth(const std::string& text, const std::string& what);

// Parses a short time into seconds: "5us", "1.5ms", "0.2s", "800ns"; a bare
// "0" is zero. Throws UsageError for a missing or unknown unit or a negative
// value.
double parse_seconds(const std::string& text, const std::string& what);

// "1 KiB", "64 MiB", "3 B": the largest binary unit that divides exactly, else
// one decimal.
std::string format_bytes(std::uint64_t bytes);

// Splits a comma list, keeping empty items ("a,,b" -> {"a", "", "b"}) so
// that callers can name them as errors.
std::vector<std::string> split_list(const std::string& text);

// The whole of `item` as a finite number ("2", "0.5", "1e3"); nullopt for an
// empty, partly numeric or non-finite item. Callers check the range.
std::optional<double> parse_number(const std::string& item);

}  // namespace dtbench
