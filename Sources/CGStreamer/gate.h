// The receive gate of a call's media (issue 48, docs/media.md "Who may send a call media"): a pad probe on each
// component's udpsrc that lets through only packets from the peer's accepted source and counts the rest, before
// they cost a decryption, a jitter buffer or a thread. GStreamer 1.22 has no element that filters by sender
// (udpsrc only tags each buffer with a GstNetAddressMeta), hence this hand-written check: a comparison of bytes.
//
//          packet from S ──► S is the accepted source? ──yes──► passed (counted: media or other)
//                                 │ no
//                                 ▼
//            may still latch and the packet is valid RTP of ──yes──► S becomes the accepted source (once), passed
//            the negotiated payload type (or a DTLS handshake record)
//                                 │ no
//                                 ▼
//                             dropped (counted)
//
// Latching (symmetric RTP for peers behind NATs) is allowed only until the first packet from the negotiated source
// and only for a few seconds after the pipeline starts, and only once: a peer that reaches us from where it said
// never moves, and a later packet from elsewhere never moves the source without a new offer (a new pipeline, a new
// gate). The negotiated source always wins: a packet from it takes the source back from a latch (a stranger who
// raced the peer's first packet is heard for that moment only).
#include <gst/net/gstnetaddressmeta.h>

/// One component's gate, shared (reference-counted) by its probe and the pipeline.
typedef struct {
    GMutex lock;
    /// The accepted source: its address's bytes (4 or 16) and port; `has_source` 0 until one is known.
    guint8 address[16];
    gsize address_size;
    guint16 port;
    /// The negotiated source (the SDP's), which always wins; `has_negotiated` 0 when the SDP named none.
    guint8 negotiated[16];
    gsize negotiated_size;
    guint16 negotiated_port;
    int has_negotiated;
    /// Any port of the accepted address is accepted (RTCP: its port is the peer's to choose).
    int any_port;
    int has_source;
    /// Whether a different source may still be latched onto, until `latch_deadline` (monotonic µs).
    int may_latch;
    gint64 latch_deadline;
    /// How long latching stays open (µs): from the pipeline's start, and again from a hold's release (held packets
    /// are judged when they are read).
    gint64 latch_window;
    /// The payload type a latching packet must carry (-1: none may latch by RTP).
    int payload_type;
    /// Whether a DTLS handshake record (content type 22, DTLS version 0xFEFF or 0xFEFD, at least a record header) may
    /// latch (a DTLS-SRTP call's handshake comes first).
    int dtls_latches;
    /// Set when the source was latched onto (read once by the session: then it sends there too).
    int latched;
    /// Packets let through that look like RTP (RFC 7983: first byte 128–191, not RTCP's payload types 64–95).
    guint64 passed_media;
    /// Every packet let through.
    guint64 passed;
    /// Packets from anyone else, dropped.
    guint64 dropped;
    /// While set, the streaming thread waits in the probe before the next packet (a DTLS-SRTP answer not yet
    /// acknowledged: no handshake flight goes out for a spoofed INVITE); the packets wait in the socket's buffer.
    /// `released` is signalled when it clears; the wait never exceeds `PARLEY_GATE_HOLD_LIMIT_US`.
    int holding;
    GCond released;
} ParleyGate;

/// The longest a gate holds its streaming thread: past the ACK's last chance (64·T1 = 32 s), in case nobody
/// releases it.
#define PARLEY_GATE_HOLD_LIMIT_US (40 * G_TIME_SPAN_SECOND)

static void parley_gate_clear(gpointer data) {
    g_mutex_clear(&((ParleyGate *)data)->lock);
    g_cond_clear(&((ParleyGate *)data)->released);
}
static void parley_gate_release(gpointer data) { g_atomic_rc_box_release_full(data, parley_gate_clear); }

/// The address's bytes and size in `out` (an IPv4-mapped IPv6 address as its IPv4 bytes), 0 when not IP.
static gsize parley_gate_address_bytes(GInetAddress *address, guint8 out[16]) {
    gsize size = g_inet_address_get_native_size(address);
    const guint8 *bytes = g_inet_address_to_bytes(address);
    if (size == 16) {
        static const guint8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        if (memcmp(bytes, mapped, 12) == 0) {
            memcpy(out, bytes + 12, 4);
            return 4;
        }
    }
    if (size != 4 && size != 16) return 0;
    memcpy(out, bytes, size);
    return size;
}

/// Whether `data` of `size` bytes is an RTP packet (not RTCP) of payload type `payload_type`.
static int parley_gate_is_rtp_of(const guint8 *data, gsize size, int payload_type) {
    return size >= 12 && data[0] >= 128 && data[0] <= 191 && (data[1] & 0x7f) == payload_type;
}

static GstPadProbeReturn parley_gate_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    ParleyGate *gate = data;
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    GstNetAddressMeta *meta = gst_buffer_get_net_address_meta(buffer);
    guint8 address[16];
    gsize size = 0;
    guint16 port = 0;
    if (meta && G_IS_INET_SOCKET_ADDRESS(meta->addr)) {
        GInetSocketAddress *socket_address = G_INET_SOCKET_ADDRESS(meta->addr);
        size = parley_gate_address_bytes(g_inet_socket_address_get_address(socket_address), address);
        port = g_inet_socket_address_get_port(socket_address);
    }
    if (g_atomic_int_get(&gate->holding)) {
        g_mutex_lock(&gate->lock);
        gint64 end = g_get_monotonic_time() + PARLEY_GATE_HOLD_LIMIT_US;
        while (gate->holding) {
            if (!g_cond_wait_until(&gate->released, &gate->lock, end)) break;
        }
        gate->holding = 0;
        g_mutex_unlock(&gate->lock);
    }
    guint8 head[2] = { 0, 0 };
    gsize length = gst_buffer_get_size(buffer);
    gst_buffer_extract(buffer, 0, head, length < 2 ? length : 2);
    int media = length >= 12 && head[0] >= 128 && head[0] <= 191 && ((head[1] & 0x7f) < 64 || (head[1] & 0x7f) > 95);
    g_mutex_lock(&gate->lock);
    int from_source = gate->has_source && size == gate->address_size && memcmp(address, gate->address, size) == 0
        && (gate->any_port || port == gate->port);
    int from_negotiated = gate->has_negotiated && size == gate->negotiated_size
        && memcmp(address, gate->negotiated, size) == 0 && (gate->any_port || port == gate->negotiated_port);
    if (from_negotiated) {
        if (!from_source) {
            // Back from a latch: the stranger raced the peer's first packet.
            memcpy(gate->address, gate->negotiated, gate->negotiated_size);
            gate->address_size = gate->negotiated_size;
            gate->port = gate->negotiated_port;
            gate->has_source = 1;
            gate->latched = 1;
        }
        gate->may_latch = 0;
        from_source = 1;
    } else if (from_source) {
        // The latched source (or the negotiated one on any port) goes on.
    } else if (size > 0 && gate->may_latch && g_get_monotonic_time() < gate->latch_deadline) {
        guint8 first[12];
        gsize got = gst_buffer_extract(buffer, 0, first, sizeof first);
        int dtls = gate->dtls_latches && got >= 12 && length >= 13 + 12 && first[0] == 22 && first[1] == 0xFE
            && (first[2] == 0xFF || first[2] == 0xFD);
        if (dtls || (gate->payload_type >= 0 && parley_gate_is_rtp_of(first, got, gate->payload_type))) {
            memcpy(gate->address, address, size);
            gate->address_size = size;
            gate->port = port;
            gate->has_source = 1;
            gate->may_latch = 0;
            gate->latched = 1;
            from_source = 1;
        }
    }
    if (from_source) {
        gate->passed++;
        if (media) gate->passed_media++;
    } else {
        gate->dropped++;
    }
    g_mutex_unlock(&gate->lock);
    return from_source ? GST_PAD_PROBE_OK : GST_PAD_PROBE_DROP;
}

/// A gate (one reference) accepting `host`:`port`, as `parley_gst_gate` puts in.
static ParleyGate *parley_gate_new(const char *host, int port, int any_port, int latch_seconds, int payload_type, int dtls_latches) {
    ParleyGate *gate = g_atomic_rc_box_new0(ParleyGate);
    g_mutex_init(&gate->lock);
    g_cond_init(&gate->released);
    GInetAddress *address = host ? g_inet_address_new_from_string(host) : NULL;
    if (address) {
        gate->address_size = parley_gate_address_bytes(address, gate->address);
        gate->has_source = gate->address_size > 0 && !g_inet_address_get_is_any(address);
        g_object_unref(address);
    }
    gate->port = (guint16)port;
    memcpy(gate->negotiated, gate->address, sizeof gate->negotiated);
    gate->negotiated_size = gate->address_size;
    gate->negotiated_port = gate->port;
    gate->has_negotiated = gate->has_source;
    gate->any_port = any_port;
    gate->may_latch = latch_seconds > 0;
    gate->latch_window = (gint64)latch_seconds * G_USEC_PER_SEC;
    gate->latch_deadline = g_get_monotonic_time() + gate->latch_window;
    gate->payload_type = payload_type;
    gate->dtls_latches = dtls_latches;
    return gate;
}

/// Puts a gate on the source pad of the element `name` (a component's udpsrc), keyed `key` on the pipeline, which
/// accepts `host`:`port` (any port when `any_port`; nothing yet when `host` is not a numeric address) and may latch
/// within `latch_seconds` onto a source sending RTP of `payload_type` (-1: none) or, when `dtls_latches`, DTLS;
/// 0 on success.
static inline int parley_gst_gate(GstElement *pipeline, const char *name, const char *key, const char *host, int port,
    int any_port, int latch_seconds, int payload_type, int dtls_latches) {
    ParleyGate *gate = parley_gate_new(host, port, any_port, latch_seconds, payload_type, dtls_latches);
    return parley_gst_add_probe(pipeline, name, "src", GST_PAD_PROBE_TYPE_BUFFER, parley_gate_probe, gate, parley_gate_release, key);
}

/// What a gate counted, and where its source is now.
typedef struct {
    guint64 passed;
    guint64 passed_media;
    guint64 dropped;
    /// 1 the first time it is read after a latch (then `host` and `port` say where the source moved).
    int latched;
    char host[64];
    int port;
} ParleyGateReading;

/// Reads the gate keyed `key` (a latch is reported once); 0 on success, -1 when there is none.
static inline int parley_gst_read_gate(GstElement *pipeline, const char *key, ParleyGateReading *out) {
    memset(out, 0, sizeof *out);
    ParleyGate *gate = g_object_get_data(G_OBJECT(pipeline), key);
    if (!gate) return -1;
    g_mutex_lock(&gate->lock);
    out->passed = gate->passed;
    out->passed_media = gate->passed_media;
    out->dropped = gate->dropped;
    out->latched = gate->latched;
    gate->latched = 0;
    if (out->latched) {
        GInetAddress *address = g_inet_address_new_from_bytes(
            gate->address, gate->address_size == 4 ? G_SOCKET_FAMILY_IPV4 : G_SOCKET_FAMILY_IPV6);
        gchar *text = g_inet_address_to_string(address);
        g_strlcpy(out->host, text, sizeof out->host);
        g_free(text);
        g_object_unref(address);
        out->port = gate->port;
    }
    g_mutex_unlock(&gate->lock);
    return 0;
}

/// Makes the gate keyed `key` accept `host` (and `port`, or any port when `any_port`) from now on, without latching
/// (RTCP follows RTP's latch: from a NAT, on a port of the NAT's choosing); 0 on success.
static inline int parley_gst_gate_accept(GstElement *pipeline, const char *key, const char *host, int port, int any_port) {
    ParleyGate *gate = g_object_get_data(G_OBJECT(pipeline), key);
    GInetAddress *address = host ? g_inet_address_new_from_string(host) : NULL;
    if (!gate || !address) {
        if (address) g_object_unref(address);
        return -1;
    }
    g_mutex_lock(&gate->lock);
    gate->address_size = parley_gate_address_bytes(address, gate->address);
    gate->has_source = gate->address_size > 0;
    gate->port = (guint16)port;
    gate->any_port = any_port;
    gate->may_latch = 0;
    g_mutex_unlock(&gate->lock);
    g_object_unref(address);
    return 0;
}

/// Holds (1) or releases (0) the packets of the gate keyed `key`: while held its streaming thread waits before the
/// next packet, so nothing it carries reaches the pipeline (a pipeline must release its gates before it stops);
/// 0 on success.
static inline int parley_gst_gate_hold(GstElement *pipeline, const char *key, int hold) {
    ParleyGate *gate = g_object_get_data(G_OBJECT(pipeline), key);
    if (!gate) return -1;
    g_mutex_lock(&gate->lock);
    if (!hold && gate->holding && gate->may_latch) gate->latch_deadline = g_get_monotonic_time() + gate->latch_window;
    g_atomic_int_set(&gate->holding, hold ? 1 : 0);
    if (!hold) g_cond_broadcast(&gate->released);
    g_mutex_unlock(&gate->lock);
    return 0;
}

/// Whether an element's input is dropped: a flag its probe reads (atomically) for each buffer.
typedef struct {
    gint dropping;
} ParleySendStop;

static GstPadProbeReturn parley_send_stop_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    (void)info;
    return g_atomic_int_get(&((ParleySendStop *)data)->dropping) ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

/// Drops every buffer reaching the element `name` (a component's udpsink) while its stop keyed `key` is set (set
/// now): an answer not yet acknowledged sends nothing at all, a DTLS client's flights included; 0 on success.
static inline int parley_gst_stop_sending(GstElement *pipeline, const char *name, const char *key) {
    ParleySendStop *stop = g_atomic_rc_box_new0(ParleySendStop);
    stop->dropping = 1;
    return parley_gst_add_probe(pipeline, name, "sink", GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST,
        parley_send_stop_probe, stop, (GDestroyNotify)g_atomic_rc_box_release, key);
}

/// Lets buffers through to the element whose stop is keyed `key` again; 0 on success.
static inline int parley_gst_resume_sending(GstElement *pipeline, const char *key) {
    ParleySendStop *stop = g_object_get_data(G_OBJECT(pipeline), key);
    if (!stop) return -1;
    g_atomic_int_set(&stop->dropping, 0);
    return 0;
}
