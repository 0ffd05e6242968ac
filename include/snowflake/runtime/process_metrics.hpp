#pragma once
// The standard process_* metrics every Prometheus client library exports
// (https://prometheus.io/docs/instrumenting/writing_clientlibs/#process-metrics),
// read from /proc at scrape time: CPU seconds, resident and virtual memory,
// open and maximum file descriptors, start time. Nothing is kept between
// scrapes.

#include <string>

namespace snowflake {

// The lines of the Prometheus text format; "" where /proc cannot be read.
std::string render_process_metrics();

}  // namespace snowflake
