import CurlHTTP
import Foundation
import Testing

/// GnuTLS's library constructor asks `_gnutls_global_init_skip()` whether to initialise itself, through
/// the dynamic linker's global lookup. These tests make that same lookup in this executable (which
/// links CurlHTTP as `orderlive` does) and check it finds CurlHTTP's answer, not the library's weak 0.
@Suite(.timeLimit(.minutes(3))) struct GnuTLSInitializationTests {
    @Test func theExecutableExportsTheSkipThatGnuTLSLooksUp() throws {
        guard let gnutls = dlopen("libgnutls.so.30", RTLD_NOW | RTLD_NOLOAD) else {
            Issue.record("libgnutls is not loaded in this process: Debian's libcurl should load it through librtmp and libldap, so this check would prove nothing")
            return
        }
        defer { dlclose(gnutls) }

        let globalLookup = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "_gnutls_global_init_skip"),
                                        "the global lookup finds no _gnutls_global_init_skip at all")
        let librarysOwn = try #require(dlsym(gnutls, "_gnutls_global_init_skip"),
                                       "this GnuTLS has no _gnutls_global_init_skip: its constructor no longer asks")
        typealias Skip = @convention(c) () -> CInt
        #expect(globalLookup != librarysOwn,
                "the global lookup resolves to GnuTLS's own weak definition: the executable does not export CurlHTTP's")
        #expect(unsafeBitCast(globalLookup, to: Skip.self)() == 1,
                "a non-zero answer is what tells GnuTLS's constructor to skip its set-up")
        #expect(unsafeBitCast(librarysOwn, to: Skip.self)() == 0)
    }
}
