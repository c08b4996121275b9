#ifndef ORDERLIVE_CCURL_SHIM_H
#define ORDERLIVE_CCURL_SHIM_H

// libcurl's setopt/getinfo entry points are C-variadic, which Swift cannot call. Each option *type*
// gets one typed wrapper here, so the value reaching curl always has the C type that option expects.
// clang does not check curl option types for us: pick the wrapper that matches the option's type in
// curl's documentation (long, curl_off_t, char *, void *, struct curl_slist *, or a callback).

#include <curl/curl.h>

typedef size_t (*orderlive_curl_data_callback)(char *buffer, size_t size, size_t count, void *context);

static inline CURLcode orderlive_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode orderlive_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode orderlive_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode orderlive_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode orderlive_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/// For CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION, which share this C signature.
static inline CURLcode orderlive_easy_setopt_data_callback(CURL *handle, CURLoption option,
                                                           orderlive_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/// For CURLOPT_OPENSOCKETFUNCTION.
static inline CURLcode orderlive_easy_setopt_opensocket(CURL *handle, curl_opensocket_callback value) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, value);
}

static inline curl_socket_t orderlive_socket_bad(void) { return CURL_SOCKET_BAD; }

static inline CURLcode orderlive_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode orderlive_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode orderlive_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode orderlive_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

static inline long orderlive_global_default(void) { return CURL_GLOBAL_DEFAULT; }
static inline size_t orderlive_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
static inline int orderlive_pause_cont(void) { return CURLPAUSE_CONT; }
static inline int orderlive_pause_recv(void) { return CURLPAUSE_RECV; }
static inline long orderlive_http_version_2tls(void) { return CURL_HTTP_VERSION_2TLS; }
static inline long orderlive_redir_post_all(void) { return CURL_REDIR_POST_ALL; }

#if defined(__linux__)
#include <errno.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

// The curl loop's thread, named and prioritised (prctl and syscall are C-variadic, and glibc's
// pthread_setname_np and gettid need _GNU_SOURCE, which Swift's Glibc module does not define).

/// Names the calling thread; at most 15 bytes are kept. 0 on success.
static inline int orderlive_name_thread(const char *name) {
    return prctl(PR_SET_NAME, name, 0, 0, 0);
}

/// Raises the calling thread's niceness by `increment` above what it is (at most to 19), lowering its
/// priority; Linux schedules threads apart. 0 on success, else errno.
static inline int orderlive_raise_thread_niceness(int increment) {
    id_t thread = (id_t)syscall(SYS_gettid);
    errno = 0;
    int current = getpriority(PRIO_PROCESS, thread);
    if (current == -1 && errno != 0) return errno;
    int wanted = current + increment > 19 ? 19 : current + increment;
    return setpriority(PRIO_PROCESS, thread, wanted) == 0 ? 0 : errno;
}

#include <sched.h>
#ifndef SCHED_IDLE
#define SCHED_IDLE 5
#endif

/// Puts the calling thread under SCHED_IDLE: it runs on what the processor's other threads leave
/// (a weight of 3 against a nice-0 thread's 1,024), never preempting them. Lowering a thread's
/// scheduling needs no privilege. 0 on success, else errno.
static inline int orderlive_idle_thread_scheduling(void) {
    struct sched_param parameter = { .sched_priority = 0 };
    return sched_setscheduler(0, SCHED_IDLE, &parameter) == 0 ? 0 : errno;
}
#endif

#endif
