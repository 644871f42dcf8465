// Retransmission of lost video packets (RFC 4588, issue 47): rtpbin's auxiliary sender and receiver for session 0,
// an rtprtxsend that keeps what we sent and resends what the peer's NACKs name (in the RTX payload type, on an SSRC of
// its own), and an rtprtxreceive that turns the peer's resent packets back into the stream they belong to before the
// jitter buffer, which asks for what is missing (do-retransmission: rtpsession sends the NACKs).
//
//   pay ─► rtpbin.send_rtp_sink_0 ─► session ─► [aux sender: rtprtxsend  96 → 98] ─► send_rtp_src_0
//   recv_rtp_sink_0 ─► session ─► [aux receiver: rtprtxreceive  96 ← 98] ─► ssrcdemux ─► jitter buffer (NACK)
//
// rtpbin asks for the auxiliary elements when the session's send and receive pads are made, so the pipeline leaves
// those two pads unlinked in its text; they are linked here once the signals are connected.

/// A bin around a new `factory` element, with ghost pads `sink_SESSION` and `src_SESSION` as rtpbin wants, its
/// payload-type-map the structure `map` (not taken).
static GstElement *parley_rtx_bin(const char *factory, guint session, const GstStructure *map) {
    GstElement *rtx = gst_element_factory_make(factory, NULL);
    if (!rtx) return NULL;
    GstElement *bin = gst_bin_new(NULL);
    g_object_set(rtx, "payload-type-map", map, NULL);
    gst_bin_add(GST_BIN(bin), rtx);
    const char *directions[2] = {"sink", "src"};
    for (int index = 0; index < 2; index++) {
        GstPad *pad = gst_element_get_static_pad(rtx, directions[index]);
        gchar *name = g_strdup_printf("%s_%u", directions[index], session);
        gst_element_add_pad(bin, gst_ghost_pad_new(name, pad));
        g_free(name);
        gst_object_unref(pad);
    }
    return bin;
}

static GstElement *parley_rtx_sender(GstElement *rtpbin, guint session, gpointer map) {
    (void)rtpbin;
    return parley_rtx_bin("rtprtxsend", session, map);
}

static GstElement *parley_rtx_receiver(GstElement *rtpbin, guint session, gpointer map) {
    (void)rtpbin;
    return parley_rtx_bin("rtprtxreceive", session, map);
}

/// Sets up retransmission on the rtpbin `name` (before its session's send and receive pads exist): what we send in
/// `payload_type` is kept and resent as `rtx_payload_type`; what the peer resends as `received_rtx_payload_type` is
/// its `received_payload_type`. 0 on success.
static inline int parley_gst_retransmission(GstElement *pipeline, const char *name, int payload_type, int rtx_payload_type,
    int received_payload_type, int received_rtx_payload_type) {
    GstElement *rtpbin = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!rtpbin) return -1;
    gchar key[16];
    GstStructure *sent = gst_structure_new_empty("application/x-rtp-pt-map");
    g_snprintf(key, sizeof key, "%d", payload_type);
    gst_structure_set(sent, key, G_TYPE_UINT, (guint)rtx_payload_type, NULL);
    GstStructure *received = gst_structure_new_empty("application/x-rtp-pt-map");
    // Both elements' maps go from the original payload type to its retransmission's.
    g_snprintf(key, sizeof key, "%d", received_payload_type);
    gst_structure_set(received, key, G_TYPE_UINT, (guint)received_rtx_payload_type, NULL);
    g_signal_connect_data(rtpbin, "request-aux-sender", G_CALLBACK(parley_rtx_sender), sent, (GClosureNotify)gst_structure_free, 0);
    g_signal_connect_data(
        rtpbin, "request-aux-receiver", G_CALLBACK(parley_rtx_receiver), received, (GClosureNotify)gst_structure_free, 0);
    g_object_set(rtpbin, "do-retransmission", TRUE, NULL);
    gst_object_unref(rtpbin);
    return 0;
}

/// Links the `src` pad of the element `from` to the request pad `pad` of the element `to`; 0 on success.
static inline int parley_gst_link_request(GstElement *pipeline, const char *from, const char *to, const char *pad) {
    GstElement *source = gst_bin_get_by_name(GST_BIN(pipeline), from);
    GstElement *target = gst_bin_get_by_name(GST_BIN(pipeline), to);
    int linked = source && target && gst_element_link_pads(source, "src", target, pad) ? 0 : -1;
    if (source) gst_object_unref(source);
    if (target) gst_object_unref(target);
    return linked;
}

/// Tells session 0 of the rtpbin `name` the stream's bandwidth (bits per second): its RTCP interval is a share of it
/// (RFC 3550 §6.2), and in AVPF one feedback packet may go early per interval (RFC 4585 §3.5.2), so a video stream's
/// NACKs and PLIs leave within tens of milliseconds rather than with the next report a second later. 0 on success.
static inline int parley_gst_session_bandwidth(GstElement *pipeline, const char *name, double bits_per_second) {
    GObject *session = parley_gst_internal_session(pipeline, name);
    if (!session) return -1;
    g_object_set(session, "bandwidth", bits_per_second, NULL);
    g_object_unref(session);
    return 0;
}
