import CCurl
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Receives a streaming response. Every method is called on the curl loop thread, in this order:
/// at most one head, any number of body chunks, exactly one completion.
public protocol StreamingResponseDelegate: AnyObject, Sendable {
    /// The final response's status and headers (after redirects; never a 1xx).
    func transferDidReceiveHead(_ head: HTTPResponseHead)
    /// A chunk of the body, valid only during the call. Return false to pause the transfer without
    /// consuming it: the same bytes are delivered again after ``StreamingTransfer/resume()``.
    func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The transfer ended: the head on a complete body (a clean end), or why it failed.
    func transferDidComplete(_ result: Result<HTTPResponseHead, CurlError>)
}

/// Where a transfer's response goes.
enum TransferSink {
    case collect(CheckedContinuation<HTTPResponse, any Error>)
    case stream(any StreamingResponseDelegate)
    /// Collected into a sequence, whose next request starts on the loop thread (``CurlLoop/performSequence(_:proceed:)``).
    case sequence(TransferSequence)
}

/// One easy handle and what its callbacks need.
///
/// Thread rule: created on the caller's thread and handed to the loop through the command queue;
/// from then on every mutable property and every libcurl call is on the loop thread only. The one
/// exception, `cancelRequested`, is atomic.
final class Transfer: @unchecked Sendable {
    let id: Int
    let request: HTTPRequest
    /// Where the response goes; nil once the transfer has completed. Dropping it then breaks the
    /// cycle delegate → (its resume slot) → StreamingTransfer → Transfer → delegate.
    var sink: TransferSink?
    let cancelRequested = Atomic<Bool>(false)

    var handle: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    let errorBuffer: UnsafeMutablePointer<CChar>
    var headerFields: [HTTPHeaders.Field] = []
    var head: HTTPResponseHead?
    var body: [UInt8] = []
    var bodyTooLarge = false
    var paused = false
    /// The address the ``HTTPRequest/addressGuard`` refused, when it refused one.
    var refusedAddress: String?

    init(id: Int, request: HTTPRequest, sink: TransferSink) {
        self.id = id
        self.request = request
        self.sink = sink
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        self.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        errorBuffer.deallocate()
    }

    /// Creates and configures the easy handle, or configures `reused` (a handle given up by
    /// ``releaseHandle(keeping:)`` and reset to libcurl's defaults). Loop thread.
    func makeHandle(reusing reused: UnsafeMutableRawPointer? = nil) -> CurlError? {
        guard let handle = reused ?? curl_easy_init() else {
            return CurlError(kind: .other, message: "libcurl could not create a transfer handle")
        }
        self.handle = handle
        let context = Unmanaged.passUnretained(self).toOpaque()
        var failed: CURLcode = CURLE_OK
        func set(_ code: CURLcode) { if code != CURLE_OK, failed == CURLE_OK { failed = code } }

        set(orderlive_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        set(orderlive_easy_setopt_string(handle, CURLOPT_URL, request.url))
        set(orderlive_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(orderlive_easy_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"))
        set(orderlive_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        set(orderlive_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, request.maximumRedirects > 0 ? 1 : 0))
        set(orderlive_easy_setopt_long(handle, CURLOPT_MAXREDIRS, max(0, request.maximumRedirects)))
        set(orderlive_easy_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, ""))
        set(orderlive_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, orderlive_http_version_2tls()))
        set(orderlive_easy_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1))
        if case .stream? = sink {
            // Larger reads mean fewer callbacks and fewer hand-offs to the consumer on a fast stream;
            // backpressure may overshoot by one read, so this also bounds that overshoot.
            set(orderlive_easy_setopt_long(handle, CURLOPT_BUFFERSIZE, 128 * 1024))
        }
        set(orderlive_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout)))
        set(orderlive_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, request.timeout.map(Self.milliseconds) ?? 0))
        if !request.tls.caFile.isEmpty {
            set(orderlive_easy_setopt_string(handle, CURLOPT_CAINFO, request.tls.caFile))
        }
        if !request.tls.pinnedPublicKey.isEmpty {
            set(orderlive_easy_setopt_string(handle, CURLOPT_PINNEDPUBLICKEY, request.tls.pinnedPublicKey))
        }
        if !request.tls.clientCertificate.isEmpty {
            set(orderlive_easy_setopt_string(handle, CURLOPT_SSLCERT, request.tls.clientCertificate))
            if !request.tls.clientKey.isEmpty { set(orderlive_easy_setopt_string(handle, CURLOPT_SSLKEY, request.tls.clientKey)) }
        }
        if let proxy = request.proxy {
            // Both set, even empty: an empty proxy means none and an empty bypass list means none, and
            // either set stops libcurl reading its environment variables.
            set(orderlive_easy_setopt_string(handle, CURLOPT_PROXY, proxy.url))
            set(orderlive_easy_setopt_string(handle, CURLOPT_NOPROXY, proxy.bypass))
        }
        if request.addressGuard != nil {
            set(orderlive_easy_setopt_opensocket(handle, curlOpenSocketCallback))
            set(orderlive_easy_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, context))
        }

        let method = request.method.uppercased()
        if let body = request.body {
            set(orderlive_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            body.withUnsafeBytes { raw in
                // COPYPOSTFIELDS copies now; POSTFIELDS would keep a pointer to memory we do not own.
                let pointer = UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(errorBuffer))
                set(orderlive_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, pointer))
            }
            if method != "POST" { set(orderlive_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method)) }
        } else if method == "HEAD" {
            set(orderlive_easy_setopt_long(handle, CURLOPT_NOBODY, 1))
        } else if method != "GET" {
            set(orderlive_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method))
        }

        // An empty `Expect:` stops libcurl from waiting for 100-continue on larger bodies.
        var lines = ["Expect:"]
        for field in request.headers {
            // Header injection guard: a CR or LF in a name or value would start a new header line.
            let name = Self.headerText(field.name, droppingColons: true)
            let value = Self.headerText(field.value, droppingColons: false)
            guard !name.isEmpty else { continue }
            lines.append(value.isEmpty ? name + ";" : name + ": " + value)
        }
        for line in lines {
            guard let appended = curl_slist_append(headerList, line) else {
                return CurlError(kind: .other, message: "libcurl could not allocate request headers")
            }
            headerList = appended
        }
        set(orderlive_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList))

        set(orderlive_easy_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION, curlHeaderCallback))
        set(orderlive_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, context))
        set(orderlive_easy_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION, curlWriteCallback))
        set(orderlive_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, context))

        if failed != CURLE_OK {
            return CurlError(kind: .other, message: Self.describe(failed), code: Int(failed.rawValue))
        }
        return nil
    }

    /// `text` without CR, LF (and colons, for a name): as it is when it holds none, which a scan of
    /// its bytes tells without the per-character filtering that cost a webhook delivery about 5 µs.
    /// Filtered by Unicode scalar, not by `Character`: "\r\n" is one Character, equal to neither "\r"
    /// nor "\n", and a filter by Character let that pair through (a header injection).
    static func headerText(_ text: String, droppingColons: Bool) -> String {
        func unwanted(_ byte: UInt32) -> Bool {
            byte == 0x0D || byte == 0x0A || (droppingColons && byte == 0x3A)
        }
        guard text.utf8.contains(where: { unwanted(UInt32($0)) }) else { return text }
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: text.unicodeScalars.filter { !unwanted($0.value) })
        return String(kept)
    }

    /// Frees the easy handle and header list. Loop thread, after the handle left the multi handle.
    /// With `keeping`, the handle is not freed but reset to libcurl's defaults and returned, for the
    /// next transfer of a sequence: no allocation and set-up of a new one per request.
    @discardableResult
    func releaseHandle(keeping: Bool = false) -> UnsafeMutableRawPointer? {
        var kept: UnsafeMutableRawPointer?
        if let handle {
            if keeping {
                curl_easy_reset(handle)
                kept = handle
            } else {
                curl_easy_cleanup(handle)
            }
        }
        handle = nil
        // After the reset: the handle no longer points at the list.
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        return kept
    }

    // MARK: Callbacks (loop thread)

    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
        // Split and trimmed as bytes, then decoded: a space, tab, colon, CR or LF byte is never part
        // of a longer UTF-8 sequence, so this finds what a split of the decoded text would.
        var length = line.count
        while length > 0, line[length - 1] == 0x0A || line[length - 1] == 0x0D { length -= 1 }
        let bytes = UnsafeRawBufferPointer(rebasing: line[0..<length])
        if bytes.starts(with: "HTTP/".utf8) {
            headerFields = []
            return
        }
        guard let first = bytes.first else {
            finishHeaderBlock()
            return
        }
        if first == 0x20 || first == 0x09, var last = headerFields.popLast() {
            // An obsolete folded continuation line.
            last.value += " " + Self.text(bytes[...])
            headerFields.append(last)
            return
        }
        guard let colon = bytes.firstIndex(of: 0x3A) else { return }
        headerFields.append(HTTPHeaders.Field(name: Self.text(bytes[..<colon]), value: Self.text(bytes[(colon + 1)...])))
    }

    /// `bytes` without leading and trailing spaces and tabs (HTTP's optional white space), decoded.
    private static func text(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        var (start, end) = (bytes.startIndex, bytes.endIndex)
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    private func finishHeaderBlock() {
        let status = responseCode()
        if (100..<200).contains(status) { return }
        let headers = HTTPHeaders(headerFields)
        if Self.isRedirect(status), let location = headers["Location"], !location.isEmpty, request.maximumRedirects > 0 {
            return  // libcurl follows this one; the final response comes next.
        }
        let head = HTTPResponseHead(status: status, headers: headers, url: effectiveURL())
        self.head = head
        if case .stream(let delegate)? = sink { delegate.transferDidReceiveHead(head) }
    }

    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch sink {
        case nil:
            return 0
        case .collect?, .sequence?:
            if body.count + bytes.count > request.maximumResponseBytes {
                bodyTooLarge = true
                return 0  // libcurl ends the transfer with CURLE_WRITE_ERROR.
            }
            body.append(contentsOf: bytes)
            return bytes.count
        case .stream(let delegate)?:
            if head == nil {
                // A body with no header block (HTTP/0.9-like): report what libcurl knows.
                let head = HTTPResponseHead(status: responseCode(), headers: HTTPHeaders(headerFields), url: effectiveURL())
                self.head = head
                delegate.transferDidReceiveHead(head)
            }
            if delegate.transferDidReceive(bytes) { return bytes.count }
            paused = true
            return orderlive_writefunc_pause()
        }
    }

    // MARK: Completion (loop thread)

    /// The outcome of a finished transfer, from libcurl's result code.
    func outcome(_ code: CURLcode) -> Result<HTTPResponseHead, CurlError> {
        if code == CURLE_WRITE_ERROR, bodyTooLarge {
            return .failure(CurlError(
                kind: .responseTooLarge,
                message: "the response body is larger than \(request.maximumResponseBytes) bytes"))
        }
        if code == CURLE_COULDNT_CONNECT, let refusedAddress, let addressGuard = request.addressGuard {
            return .failure(CurlError(kind: .couldNotConnect, message: addressGuard.refusal(refusedAddress), code: Int(code.rawValue)))
        }
        guard code == CURLE_OK else {
            var message = String(cString: errorBuffer)
            if message.isEmpty { message = Self.describe(code) }
            message = message.trimming(" \t\r\n")
            return .failure(CurlError(kind: Self.kind(of: code), message: message, code: Int(code.rawValue)))
        }
        let head = self.head ?? HTTPResponseHead(
            status: responseCode(), headers: HTTPHeaders(headerFields), url: effectiveURL())
        if Self.isRedirect(head.status) && (head.headers["Location"] ?? "").isEmpty {
            return .failure(CurlError(
                kind: .redirectWithoutLocation,
                message: "the server answered \(head.status) without a Location to redirect to"))
        }
        return .success(head)
    }

    private func responseCode() -> Int {
        guard let handle else { return 0 }
        var status = 0
        _ = orderlive_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return status
    }

    private func effectiveURL() -> String {
        guard let handle else { return request.url }
        var pointer: UnsafeMutablePointer<CChar>?
        guard orderlive_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &pointer) == CURLE_OK,
              let pointer else { return request.url }
        return String(cString: pointer)
    }

    static func isRedirect(_ status: Int) -> Bool {
        [301, 302, 303, 307, 308].contains(status)
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        let total = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        return Int(min(max(total.rounded(.up), 0), Double(Int32.max)))
    }

    static func describe(_ code: CURLcode) -> String {
        guard let text = curl_easy_strerror(code) else { return "libcurl error" }
        return String(cString: text)
    }

    static func kind(of code: CURLcode) -> CurlError.Kind {
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: .invalidURL
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .couldNotResolveHost
        case CURLE_COULDNT_CONNECT: .couldNotConnect
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
             CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE, CURLE_SSL_SHUTDOWN_FAILED,
             CURLE_SSL_INVALIDCERTSTATUS, CURLE_USE_SSL_FAILED, CURLE_SSL_ENGINE_NOTFOUND,
             CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED:
            .tls
        case CURLE_TOO_MANY_REDIRECTS: .tooManyRedirects
        case CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR,
             CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_HTTP3:
            .connectionLost
        case CURLE_ABORTED_BY_CALLBACK: .cancelled
        default: .other
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing characters from `characters` (by default space and tab,
    /// HTTP's optional white space), as a new `String`.
    public func trimming(_ characters: String = " \t") -> String {
        // By scalar, not Character: "\r\n" is one Character and would match neither "\r" nor "\n".
        // A linear search of the few characters given costs less than building a set of them.
        let trimmed = characters.unicodeScalars
        var scalars = Substring(self).unicodeScalars
        while let first = scalars.first, trimmed.contains(first) { scalars.removeFirst() }
        while let last = scalars.last, trimmed.contains(last) { scalars.removeLast() }
        return String(scalars)
    }
}

/// libcurl's header callback: one complete header line per call, status lines included.
private func curlHeaderCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let buffer, let context else { return 0 }
    let length = size * count
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: length))
    return length
}

/// libcurl's write callback: a chunk of the (decoded) body.
private func curlWriteCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let length = size * count
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receiveBody(UnsafeRawBufferPointer(start: buffer, count: length))
}
