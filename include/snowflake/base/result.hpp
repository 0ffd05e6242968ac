#pragma once
// Errors are values at the library's boundaries: Boost.Outcome's result.
// policy::terminate: reading the value of an error (or the error of a value)
// is a programming bug and ends the process instead of being undefined.

#include <boost/outcome/result.hpp>
#include <boost/outcome/success_failure.hpp>
#include <boost/outcome/try.hpp>

namespace snowflake {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;

template <class T, class E>
using Result = outcome::result<T, E, outcome::policy::terminate>;

}  // namespace snowflake
