import Foundation
import Glibc
import ParleyIO
import Synchronization

/// The driver of a ``PushDeviceMachine`` on an event loop: it carries out the machine's effects (the connection is a
/// ParleyIO ``StreamChannel`` with length-prefixed frames; the reconnect wait a loop timer; the handler is called
/// synchronously) and feeds back what the socket, the timer and the handler say. Loop-confined (reached through
/// `LoopBound`), except `published`, a Mutex.
final class DeviceClientCore: StreamChannelDelegate {
    typealias Codec = FrameDecoder
    typealias Tag = Never
    private typealias Channel = StreamChannel<DeviceClientCore>

    let loop: EventLoop
    /// The state as readers on any thread see it.
    let published = PublishedDeviceState()
    private let configuration: PushDeviceClient.Configuration
    private let handler: @Sendable (PushDelivery) -> PushAck
    private let onEvent: (@Sendable (PushDeviceClient.Event) -> Void)?
    private var machine: PushDeviceMachine
    private var channel: Channel?
    private var reconnectTimer: LoopTimer?
    /// The handler is running; a ``stop()`` it calls waits until its ack is sent.
    private var handlingPush = false
    private var stopAfterPush = false
    private let encoder = FrameEncoder()

    init(
        configuration: PushDeviceClient.Configuration, loop: EventLoop,
        handler: @escaping @Sendable (PushDelivery) -> PushAck, onEvent: (@Sendable (PushDeviceClient.Event) -> Void)?
    ) {
        self.configuration = configuration
        self.loop = loop
        self.handler = handler
        self.onEvent = onEvent
        machine = PushDeviceMachine(token: configuration.token, backoff: configuration.backoff)
    }

    func start() { feed(.start) }

    func stop() {
        if handlingPush {
            stopAfterPush = true
            return
        }
        feed(.stop)
    }

    // MARK: The machine's effects

    private func feed(_ input: PushDeviceMachine.Input) {
        let effects = machine.handle(input)
        published.state.withLock { $0 = machine.state }
        for effect in effects { run(effect) }
    }

    private func run(_ effect: PushDeviceMachine.Effect) {
        switch effect {
        case .connect:
            connect()
        case .send(let message):
            do {
                channel?.send(try encoder.frame(message))
            } catch {
                // An ack or register is a few hundred bytes; only a handler's enormous `reason` could get here.
                onEvent?(.ignored("could not send '\(message.kind.rawValue)': \(error)"))
            }
        case .close(let reason):
            let closing = channel
            channel = nil
            closing?.delegate = nil
            closing?.close(.closed(reason), flushing: true)
        case .scheduleReconnect(let delay):
            if let reconnectTimer { loop.cancel(reconnectTimer) }
            reconnectTimer = loop.schedule(after: .milliseconds(Int64((delay * 1000).rounded()))) { [self] in
                reconnectTimer = nil
                feed(.reconnectDue)
            }
        case .cancelReconnect:
            if let reconnectTimer { loop.cancel(reconnectTimer) }
            reconnectTimer = nil
        case .deliver(let delivery):
            handlingPush = true
            let ack = handler(delivery)
            handlingPush = false
            feed(.handled(delivery, ack))
            if stopAfterPush {
                stopAfterPush = false
                feed(.stop)
            }
        case .event(let event):
            onEvent?(event)
        }
    }

    private func connect() {
        let endpoint = configuration.endpoint
        do throws(IOError) {
            let started = try Socket.startConnect(to: endpoint.socketAddress)
            do throws(IOError) {
                let options = StreamChannelOptions(
                    maxQueuedBytes: configuration.maxQueuedBytes,
                    setupTimeout: .seconds(atLeastAMillisecond: configuration.connectTimeout))
                channel = try Channel(
                    loop: loop, fd: started.fd, connecting: true, codec: FrameDecoder(), options: options,
                    delegate: self)
            } catch {
                Glibc.close(started.fd)
                throw error
            }
        } catch {
            feed(.connectFailed(PushSocketError(error).description))
        }
    }

    // MARK: StreamChannelDelegate

    func streamChannelDidOpen(_ channel: StreamChannel<DeviceClientCore>) {
        guard channel === self.channel else { return }
        feed(.connected)
    }

    func streamChannel(_ channel: StreamChannel<DeviceClientCore>, received frame: Data) {
        guard channel === self.channel else { return }
        do {
            feed(.received(try PushCodec.decode(frame)))
        } catch {
            feed(.undecodable(error.message))
        }
    }

    func streamChannel(_ channel: StreamChannel<DeviceClientCore>, failedToDecode failure: FrameError) {
        // What is queued (an ack) still goes; the drop is reported when the channel says it closed.
        channel.close(.framing(failure.description), flushing: true)
    }

    func streamChannel(
        _ channel: StreamChannel<DeviceClientCore>, closedBecause reason: StreamCloseReason, unsent: [Never]
    ) {
        guard channel === self.channel else { return }
        self.channel = nil
        let endpoint = configuration.endpoint
        switch reason {
        case .connectFailed(ETIMEDOUT) where !machine.hasConnectionEstablished:
            feed(.connectFailed("connect \(endpoint): timed out after \(configuration.connectTimeout) s"))
        case .connectFailed(let code):
            feed(.connectFailed(PushSocketError("connect \(endpoint)", code: code).description))
        case .peerClosed, .socketError, .idle, .queueOverflow, .handshakeFailed, .tlsFailed, .closed, .framing:
            feed(machine.hasConnectionEstablished ? .dropped(reason.description) : .connectFailed(reason.description))
        }
    }
}

/// The device client's state for readers on any thread.
final class PublishedDeviceState: Sendable {
    let state = Mutex<PushDeviceClient.State>(.idle)
}

extension PushDeviceMachine {
    /// Whether the connection came up (registering or registered) rather than still being made.
    var hasConnectionEstablished: Bool {
        switch state {
        case .registering, .registered: true
        case .idle, .connecting, .waitingToReconnect, .stopped: false
        }
    }
}
