internal import CAres
import Glibc
internal import ParleyIO

/// What one finished query yields: an answer, or a failure with how long "nothing there" may be believed.
enum DNSOutcome {
    /// Records of the type asked for.
    case answer(DNSAnswer)
    /// Nothing usable; `negativeTTL` is the SOA's negative-caching time (RFC 2308) for NXDOMAIN and empty answers.
    case failure(DNSFailureReason, negativeTTL: UInt32?)
}

/// Turns c-ares' status and raw answer into a `DNSOutcome`. c-ares (1.18, Debian 12) parses the records — SRV,
/// NAPTR, A and AAAA, names decompressed — but its SRV and NAPTR parsers drop the TTLs and nothing of it reports a
/// CNAME loop or the SOA of an empty answer, so the resource records' fixed fields are read here first
/// (`DNSMessage`), with c-ares' `ares_expand_name` for every name.
enum DNSAnswerReader {
    /// What c-ares' parser made of the records.
    private enum Parsed {
        case records(DNSRecords)
        case failed(DNSFailureReason)
    }

    static func read(
        status: Int32, question: DNSQuestion, answer: UnsafeBufferPointer<UInt8>?, recordLimit: Int, maxTTL: UInt32
    ) -> DNSOutcome {
        switch status {
        case ARES_SUCCESS, ARES_ENODATA, ARES_ENOTFOUND:
            guard let answer, answer.count >= 12 else {
                return .failure(status == ARES_ENOTFOUND ? .nameNotFound : .noRecords, negativeTTL: nil)
            }
            let message: DNSMessage
            do {
                message = try DNSMessage(answer)
            } catch {
                return .failure(.malformedAnswer(error.detail), negativeTTL: nil)
            }
            if status == ARES_ENOTFOUND { return .failure(.nameNotFound, negativeTTL: message.negativeTTL) }
            return records(message, question: question, limit: recordLimit, maxTTL: maxTTL)
        case ARES_ESERVFAIL: return .failure(.serverError("SERVFAIL"), negativeTTL: nil)
        case ARES_EREFUSED: return .failure(.serverError("REFUSED"), negativeTTL: nil)
        case ARES_ENOTIMP: return .failure(.serverError("NOTIMP"), negativeTTL: nil)
        case ARES_EFORMERR: return .failure(.serverError("FORMERR"), negativeTTL: nil)
        case ARES_ETIMEOUT: return .failure(.timedOut, negativeTTL: nil)
        case ARES_ECONNREFUSED: return .failure(.connectionRefused, negativeTTL: nil)
        case ARES_EBADRESP: return .failure(.malformedAnswer("c-ares could not read it"), negativeTTL: nil)
        case ARES_EBADNAME, ARES_EBADQUERY: return .failure(.badName, negativeTTL: nil)
        case ARES_EDESTRUCTION, ARES_ECANCELLED: return .failure(.resolverClosed, negativeTTL: nil)
        default: return .failure(.resolverFailure(String(cString: ares_strerror(status))), negativeTTL: nil)
        }
    }

    /// The records of the asked type, after the checks: the count against the limit, a CNAME chain that loops.
    private static func records(_ message: DNSMessage, question: DNSQuestion, limit: Int, maxTTL: UInt32) -> DNSOutcome {
        let wanted = UInt16(question.type.code)
        let matching = message.answers.filter { $0.type == wanted }
        if matching.count > limit { return .failure(.tooManyRecords(count: matching.count, limit: limit), negativeTTL: nil) }
        let chain: [String]
        switch message.cnameChain(from: question.name) {
        case .loop(let names): return .failure(.cnameLoop(names), negativeTTL: nil)
        case .tooLong: return .failure(.malformedAnswer("a CNAME chain of more than 16 names"), negativeTTL: nil)
        case .chain(let names): chain = names
        }
        guard !matching.isEmpty else { return .failure(.noRecords, negativeTTL: message.negativeTTL) }
        let chainTTLs = message.answers.filter { $0.type == DNSMessage.cname && chain.contains($0.name) }.map(\.ttl)
        let ttl = min((matching.map(\.ttl) + chainTTLs).min() ?? 0, maxTTL)
        let buffer = message.bytes
        let parsed: Parsed
        switch question.type {
        case .srv: parsed = parseSRV(buffer)
        case .naptr: parsed = parseNAPTR(buffer)
        case .a: parsed = parseA(buffer, capacity: matching.count)
        case .aaaa: parsed = parseAAAA(buffer, capacity: matching.count)
        }
        switch parsed {
        case .records(let records) where records.count > 0: return .answer(DNSAnswer(records: records, ttl: ttl))
        case .records: return .failure(.noRecords, negativeTTL: message.negativeTTL)
        case .failed(let reason): return .failure(reason, negativeTTL: nil)
        }
    }

    private static func parseSRV(_ buffer: UnsafeBufferPointer<UInt8>) -> Parsed {
        var head: UnsafeMutablePointer<ares_srv_reply>?
        let status = ares_parse_srv_reply(buffer.baseAddress, Int32(buffer.count), &head)
        defer { if let head { ares_free_data(head) } }
        guard status == ARES_SUCCESS else { return .failed(parseFailure(status, "SRV")) }
        var records: [SRVRecord] = []
        var node = head
        while let reply = node?.pointee {
            records.append(SRVRecord(
                priority: reply.priority, weight: reply.weight, port: reply.port, target: String(cString: reply.host)))
            node = reply.next
        }
        return .records(.srv(records))
    }

    private static func parseNAPTR(_ buffer: UnsafeBufferPointer<UInt8>) -> Parsed {
        var head: UnsafeMutablePointer<ares_naptr_reply>?
        let status = ares_parse_naptr_reply(buffer.baseAddress, Int32(buffer.count), &head)
        defer { if let head { ares_free_data(head) } }
        guard status == ARES_SUCCESS else { return .failed(parseFailure(status, "NAPTR")) }
        var records: [NAPTRRecord] = []
        var node = head
        while let reply = node?.pointee {
            records.append(NAPTRRecord(
                order: reply.order, preference: reply.preference, flags: String(cString: reply.flags),
                service: String(cString: reply.service), regexp: String(cString: reply.regexp),
                replacement: String(cString: reply.replacement)))
            node = reply.next
        }
        return .records(.naptr(records))
    }

    private static func parseA(_ buffer: UnsafeBufferPointer<UInt8>, capacity: Int) -> Parsed {
        var entries = [ares_addrttl](repeating: ares_addrttl(), count: max(capacity, 1))
        var count = Int32(entries.count)
        let status = ares_parse_a_reply(buffer.baseAddress, Int32(buffer.count), nil, &entries, &count)
        guard status == ARES_SUCCESS else { return status == ARES_ENODATA ? .records(.addresses([])) : .failed(parseFailure(status, "A")) }
        return .records(.addresses(entries.prefix(Int(count)).map { IPAddress($0.ipaddr).text }))
    }

    private static func parseAAAA(_ buffer: UnsafeBufferPointer<UInt8>, capacity: Int) -> Parsed {
        var entries = [ares_addr6ttl](repeating: ares_addr6ttl(), count: max(capacity, 1))
        var count = Int32(entries.count)
        let status = ares_parse_aaaa_reply(buffer.baseAddress, Int32(buffer.count), nil, &entries, &count)
        guard status == ARES_SUCCESS else { return status == ARES_ENODATA ? .records(.addresses([])) : .failed(parseFailure(status, "AAAA")) }
        return .records(.addresses(entries.prefix(Int(count)).map { entry in
            var address = in6_addr()
            withUnsafeBytes(of: entry.ip6addr) { source in
                withUnsafeMutableBytes(of: &address) { $0.copyMemory(from: source) }
            }
            return IPAddress(address).text
        }))
    }

    private static func parseFailure(_ status: Int32, _ type: String) -> DNSFailureReason {
        status == ARES_ENODATA ? .noRecords : .malformedAnswer("c-ares could not read its \(type) records")
    }
}
