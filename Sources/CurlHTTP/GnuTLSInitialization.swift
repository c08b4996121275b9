import CCurl

/// Tells GnuTLS not to initialise itself when it is loaded, because nothing in this process uses it.
///
/// Debian's libcurl (the OpenSSL flavour this package links) also loads GnuTLS, through librtmp and
/// libldap, and GnuTLS initialises itself in a library constructor whether or not anything uses it:
/// it reads the system's crypto policy, loads p11-kit and its trust modules and sets up its
/// cryptographic back end. That cost the agent about 1 MB of resident memory for its whole life
/// (docs/PERFORMANCE.md, "The agent's memory"). Nothing here needs it: every transfer is limited to
/// `http` and `https` (``Transfer``), which curl serves with OpenSSL, and every GnuTLS user
/// (librtmp, libldap, a GnuTLS build of curl) calls `gnutls_global_init()` itself before its
/// first use, so skipping the implicit call only defers GnuTLS's set-up to a use that never comes.
///
/// This is GnuTLS's documented opt-out (`GNUTLS_SKIP_GLOBAL_INIT` in gnutls.h, the compiled form of
/// the `GNUTLS_NO_IMPLICIT_INIT=1` environment variable): the library's constructor calls
/// `_gnutls_global_init_skip()` through the dynamic linker, which resolves it to the executable's
/// definition ahead of the library's weak one that answers 0. An executable does not export its
/// symbols by default, so this target's linker settings (Package.swift) export this one from every
/// executable that links it. A process without this module linked in is unaffected.
@_cdecl("_gnutls_global_init_skip")
public func gnutlsGlobalInitSkip() -> CInt {
    1
}
