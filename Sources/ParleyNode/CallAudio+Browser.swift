import Foundation
import ICE
import Media
import ParleyIO

/// A call's local audio carried by a browser: the page's connection and how long it has been without one.
final class BrowserLink {
    let audio: BrowserAudio
    /// Names this page's part in the call (the answer's and the events' `session`), so a page tells its own from
    /// another's.
    let session = String(UInt64.random(in: 1...UInt64.max), radix: 36)
    /// When the handover began, and since when the connection has not been up (nil while connected).
    let since: ContinuousClock.Instant
    var downSince: ContinuousClock.Instant?
    var connected = false
    /// The page's audio buffers counted at the last look, and when that count last grew.
    var received = -1
    var receivedAt: ContinuousClock.Instant

    init(_ audio: BrowserAudio, at now: ContinuousClock.Instant) {
        self.audio = audio
        since = now
        downSince = now
        receivedAt = now
    }
}

/// Why a browser could not be given a call's audio.
enum BrowserAudioRefusal: Error {
    /// No such call, or it has no audio yet (answer it first).
    case noAudio(String)
    /// Another page carries it (ask with takeOver).
    case taken
    /// The offer could not be answered.
    case offer(String)
}

/// Browser audio (docs/web-softphone.md, "Audio in the browser"): a page's offer answered by a ``BrowserAudio`` that
/// becomes the call's microphone and speaker; its connection watched four times a second, the call's configured audio
/// coming back when the page goes (closed or failed, down for 5 s, or never connected in 10 s).
extension CallAudio {
    /// How long a page's connection may stay down (or never come up) before the call takes its own audio back.
    static let browserDownLimit = Duration.seconds(5), browserConnectLimit = Duration.seconds(10)

    /// Answers `offer` for `conversation`'s audio (on the loop; the negotiation runs off it), `done` on the loop.
    func openBrowserAudio(
        _ conversation: UUID, offer: String, takeOver: Bool, done: @escaping @Sendable (Result<(answer: String, session: String), BrowserAudioRefusal>) -> Void
    ) {
        guard sessions[conversation] != nil else { return done(.failure(.noAudio("the call has no audio (yet): answer it, or wait until it is up"))) }
        guard browsers[conversation] == nil || takeOver else { return done(.failure(.taken)) }
        let servers = configuration.ice(through: nil)?.servers
        let stun = servers?.stun.map { "stun://\($0.host):\($0.port)" }
        let turn = servers?.turn.map(Self.webRTCURI)
        let me = LoopWeak(self, identity: loop.identity)
        DispatchQueue.global().async { [loop] in
            let made = Result { () throws(MediaError) in try BrowserAudio(offer: offer, stunServer: stun, turnServer: turn) }
            loop.execute {
                guard let self = me.value else {
                    if case .success(let browser) = made { browser.stop() }
                    return done(.failure(.noAudio("parleyd is stopping")))
                }
                switch made {
                case .failure(let error): done(.failure(.offer(error.message)))
                case .success(let browser): self.adopt(browser, for: conversation, done: done)
                }
            }
        }
    }

    /// The TURN server as webrtcbin takes it: `turn://USER:PASSWORD@HOST:PORT` (both percent-encoded), with
    /// `?transport=tcp` for a TCP allocation. It holds the password: it goes to webrtcbin's property, never to a log.
    static func webRTCURI(_ server: TURNServer) -> String {
        let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        func escaped(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "" }
        let host = server.host.contains(":") ? "[\(server.host)]" : server.host
        return "turn://\(escaped(server.user)):\(escaped(server.password))@\(host):\(server.port)"
            + (server.overTCP ? "?transport=tcp" : "")
    }

    /// Hands `conversation`'s audio to `browser` (another page's goes), if the call still has audio.
    private func adopt(_ browser: BrowserAudio, for conversation: UUID, done: (Result<(answer: String, session: String), BrowserAudioRefusal>) -> Void) {
        guard let session = sessions[conversation] else {
            browser.stop()
            return done(.failure(.noAudio("the call ended")))
        }
        if let old = browsers[conversation] {
            old.audio.stop()
            onBrowserAudio?(conversation, old.session, "ended", "another page took the call's audio")
        }
        let link = BrowserLink(browser, at: .now)
        browsers[conversation] = link
        session.handOver(to: browser)
        log.info("\(conversation): the call's audio goes to a browser")
        onBrowserAudio?(conversation, link.session, "connecting", nil)
        watchBrowsers()
        done(.success((browser.answer, link.session)))
    }

    /// Ends the browser's part in `conversation`'s audio: the call's configured source and sink again (if it goes
    /// on); false when no browser had it.
    @discardableResult
    func endBrowserAudio(_ conversation: UUID, reason: String) -> Bool {
        guard let link = browsers.removeValue(forKey: conversation) else { return false }
        sessions[conversation]?.handOver(to: nil)
        link.audio.stop()
        log.info("\(conversation): the browser's audio ended (\(reason))")
        onBrowserAudio?(conversation, link.session, "ended", reason)
        return true
    }

    /// Looks at every page's connection four times a second while there are any.
    private func watchBrowsers() {
        guard browserWatch == nil else { return }
        browserWatch = loop.schedule(after: .milliseconds(250)) { [weak self] in
            guard let self else { return }
            self.browserWatch = nil
            self.checkBrowsers(at: .now)
            if !self.browsers.isEmpty { self.watchBrowsers() }
        }
    }

    private func checkBrowsers(at now: ContinuousClock.Instant) {
        for (conversation, link) in browsers {
            switch link.audio.connectionState {
            case .connected:
                link.downSince = nil
                if !link.connected {
                    link.connected = true
                    link.receivedAt = now
                    onBrowserAudio?(conversation, link.session, "connected", nil)
                }
                let received = link.audio.buffersReceived
                if received != link.received {
                    link.received = received
                    link.receivedAt = now
                } else if now - link.receivedAt >= Self.browserDownLimit {
                    // A page that vanished (a closed tab, a lost network) sends nothing more, and nothing may say so.
                    endBrowserAudio(conversation, reason: "the page sent no audio for 5 s")
                }
            case .failed, .closed:
                endBrowserAudio(conversation, reason: "the page's connection \(link.audio.connectionState)")
            case .new, .connecting, .disconnected:
                let down = link.downSince ?? now
                link.downSince = down
                if !link.connected, now - link.since >= Self.browserConnectLimit {
                    endBrowserAudio(conversation, reason: "the page never connected")
                } else if link.connected, now - down >= Self.browserDownLimit {
                    endBrowserAudio(conversation, reason: "the page was gone for 5 s")
                }
            }
        }
    }
}
