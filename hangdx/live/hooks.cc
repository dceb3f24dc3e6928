#include "hangdx/live/hooks.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "hangdx/live/fanout.h"
#include "hangdx/live/url.h"

extern char** environ;

namespace hangdx::live {
namespace {

// FNV-1a, 64 bits: the same fingerprint in every process and build.
std::string Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string Str(const nlohmann::ordered_json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Culprits(const nlohmann::ordered_json& finding) {
  std::string s;
  auto it = finding.find("culprit_ranks");
  if (it != finding.end() && it->is_array())
    for (const auto& r : *it) {
      if (!s.empty()) s += ',';
      s += r.dump();
    }
  return s;
}

}  // namespace

nlohmann::ordered_json AlertmanagerPayload(const nlohmann::ordered_json& record, const std::string& job) {
  const nlohmann::ordered_json& f = record.contains("finding") ? record["finding"] : record;
  std::string pg;
  if (auto p = f.find("pg"); p != f.end() && p->is_object()) pg = Str(*p, "name");
  nlohmann::ordered_json labels = {{"alertname", "HangdxHang"},
                                   {"job", job},
                                   {"kind", Str(f, "kind")},
                                   {"pg", pg},
                                   {"severity", Str(f, "severity") == "error" ? "critical" : "warning"}};
  nlohmann::ordered_json annotations = {{"summary", Str(f, "summary")},
                                        {"culprit_ranks", Culprits(f)},
                                        {"bundle", Str(record, "bundle")},
                                        {"fix_hint", Str(f, "fix_hint")}};
  nlohmann::ordered_json alert = {{"status", "firing"},
                                  {"labels", labels},
                                  {"annotations", annotations},
                                  {"startsAt", Str(record, "found_at")},
                                  {"endsAt", "0001-01-01T00:00:00Z"},
                                  {"generatorURL", ""},
                                  {"fingerprint", Fnv1a(Str(record, "fingerprint"))}};
  return {{"version", "4"},         {"groupKey", "{}:{job=\"" + job + "\"}"},
          {"truncatedAlerts", 0},   {"status", "firing"},
          {"receiver", "hangdx"},   {"groupLabels", {{"job", job}}},
          {"commonLabels", labels}, {"commonAnnotations", annotations},
          {"externalURL", ""},      {"alerts", nlohmann::ordered_json::array({alert})}};
}

StatusOr<int> RunHookCommand(const std::string& command, const nlohmann::ordered_json& record,
                             std::chrono::milliseconds timeout) {
  const nlohmann::ordered_json& f = record.contains("finding") ? record["finding"] : record;
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env.push_back("HANGDX_KIND=" + Str(f, "kind"));
  env.push_back("HANGDX_CULPRITS=" + Culprits(f));
  env.push_back("HANGDX_SUMMARY=" + Str(f, "summary"));
  env.push_back("HANGDX_BUNDLE=" + Str(record, "bundle"));
  env.push_back("HANGDX_FINGERPRINT=" + Str(record, "fingerprint"));
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return IoError(std::string("hook: pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[0], 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // so that a timeout kills the whole hook
  posix_spawnattr_setpgroup(&attr, 0);
  std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipefd[0]);
  if (rc != 0) {
    ::close(pipefd[1]);
    return IoError("hook: cannot run /bin/sh: " + std::string(std::strerror(rc)));
  }
  // The record on stdin; a hook that does not read it is fine. A write to
  // a pipe its reader closed raises SIGPIPE, which would end the whole
  // watch: it is blocked on this thread (hooks run on threads of their own).
  sigset_t pipe_sig;
  sigemptyset(&pipe_sig);
  sigaddset(&pipe_sig, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_sig, nullptr);
  std::string input = record.dump() + "\n";
  ::fcntl(pipefd[1], F_SETFL, O_NONBLOCK);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (size_t off = 0; off < input.size();) {
    ssize_t n = ::write(pipefd[1], input.data() + off, input.size() - off);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN && std::chrono::steady_clock::now() < deadline) {
      pollfd p{pipefd[1], POLLOUT, 0};
      ::poll(&p, 1, 50);
    } else {
      break;  // EPIPE: the hook closed stdin
    }
  }
  ::close(pipefd[1]);
  for (;;) {
    int status = 0;
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return IoError("hook: killed after " + std::to_string(timeout.count()) + " ms: " + command);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status PostWebhook(const std::string& url, const nlohmann::ordered_json& record, const std::string& job,
                   std::chrono::milliseconds timeout) {
  HANGDX_ASSIGN_OR_RETURN(Endpoint e, ParseUrl(url));
  HttpFanout fan;
  fan.AddEndpoint(Endpoint{e.host, e.port, ""});
  HttpCall call(0, "POST", e.path.empty() ? "/" : e.path, AlertmanagerPayload(record, job).dump());
  call.headers.emplace_back("Content-Type", "application/json");
  auto replies = fan.Run({call}, timeout);
  const HttpReply& r = replies[0];
  if (r.status / 100 != 2)
    return IoError("webhook " + url + ": " + (r.status ? "answered " + std::to_string(r.status) : r.error));
  return Status::Ok();
}

}  // namespace hangdx::live
