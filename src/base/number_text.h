// One grammar for a number written in a flag, a list item or a rule ("rescale:2"), shared by every
// parser of the CLI, Python and the server so that "0x10", "inf", "1e39" for a float or " 2" are
// refused everywhere alike (strtod alone accepts hex, infinities, NaN and leading space):
//   number  = [sign] digits ["." [digits]] [exponent] | [sign] "." digits [exponent]
//   exponent = ("e" | "E") [sign] digits,   sign = "+" | "-"
// The value must be finite in the type it is read into: 1e39 is a double, not a float.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace ragform {

// True when `text` is a number of the grammar above (nothing before or after it).
bool is_decimal_number(std::string_view text);
// The value, or nullopt when `text` is not of the grammar or is not finite as a double / float.
std::optional<double> parse_decimal(std::string_view text);
std::optional<float> parse_decimal_float(std::string_view text);
// "nan", "inf", "infinity" in any case, signed or not: the words strtod reads as non-finite values,
// refused as "not a finite number" rather than "not a number".
bool is_non_finite_word(std::string_view text);
// `v` with `digits` significant digits, as printf's %g writes it ("0.3125", "1.2e-05"): how
// summaries and messages print a measured number.
std::string significant(double v, int digits);

}  // namespace ragform
