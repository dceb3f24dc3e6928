// hangdx/live/hooks.h
// What `hangdx watch` does besides printing when it reports a finding:
// run a command (--hook-command) or POST an alert (--webhook URL) in the
// JSON shape of Alertmanager's webhook receiver, so that whatever already
// takes Alertmanager alerts (a pager, a chat bridge, a job killer) takes
// hangdx's too.
//
// The command runs under /bin/sh -c with the finding record (the JSON that
// GET /findings lists) on stdin and in the environment HANGDX_KIND,
// HANGDX_CULPRITS ("3" or "0,2"), HANGDX_SUMMARY, HANGDX_BUNDLE,
// HANGDX_FINGERPRINT; it is killed after `timeout`. Hooks run on a thread
// of their own: a slow hook never delays the watch.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "hangdx/base/status.h"

namespace hangdx::live {

// The Alertmanager webhook document for one finding record:
// {"version": "4", "status": "firing", "receiver": "hangdx",
//  "groupKey": ..., "alerts": [{"status": "firing", "labels": {"alertname":
//  "HangdxHang", "job", "kind", "pg", "severity"}, "annotations": {"summary",
//  "culprit_ranks", "bundle", "fix_hint"}, "startsAt": RFC 3339,
//  "endsAt": "0001-01-01T00:00:00Z", "fingerprint": 16 hex digits}], ...}.
nlohmann::ordered_json AlertmanagerPayload(const nlohmann::ordered_json& record, const std::string& job);

// Runs `command` with the record (see above); returns its exit status, or
// kIo when it could not start, or was killed at `timeout`.
StatusOr<int> RunHookCommand(const std::string& command, const nlohmann::ordered_json& record,
                             std::chrono::milliseconds timeout);

// POSTs AlertmanagerPayload to `url`. Errors (kIo): no 2xx answer.
Status PostWebhook(const std::string& url, const nlohmann::ordered_json& record, const std::string& job,
                   std::chrono::milliseconds timeout);

}  // namespace hangdx::live
