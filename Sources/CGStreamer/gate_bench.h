// A timing of the receive gate's check per packet (issue 48's figure, `parley-bench-gate`, Scripts/bench-media):
// packets as udpsrc makes them — a buffer of an RTP packet's size with the sender's GstNetAddressMeta — half from
// the accepted source and half from a stranger, through the gate's probe. The baseline, in the same run, is making
// those buffers: the work udpsrc already does for every packet before the gate sees it.

/// Makes `packets` buffers (the baseline), then runs them through a gate accepting 127.0.0.1:40000 (half are from
/// 127.0.0.2); the nanoseconds each took in `making_ns` and `gate_ns`, and the packets the gate passed; 0 on success.
static inline int parley_gst_gate_bench(int packets, gint64 *making_ns, gint64 *gate_ns, gint64 *passed) {
    if (packets <= 0) return -1;
    ParleyGate *gate = parley_gate_new("127.0.0.1", 40000, 0, 0, 0, 0);
    GInetAddress *peer = g_inet_address_new_from_string("127.0.0.1"), *other = g_inet_address_new_from_string("127.0.0.2");
    GSocketAddress *from_peer = g_inet_socket_address_new(peer, 40000), *from_stranger = g_inet_socket_address_new(other, 40000);
    guint8 payload[172] = { 0x80, 0x00 };
    GstBuffer **buffers = g_new(GstBuffer *, packets);
    gint64 start = g_get_monotonic_time() * 1000;
    for (int index = 0; index < packets; index++) {
        buffers[index] = gst_buffer_new_allocate(NULL, sizeof payload, NULL);
        gst_buffer_fill(buffers[index], 0, payload, sizeof payload);
        gst_buffer_add_net_address_meta(buffers[index], index % 2 ? from_stranger : from_peer);
    }
    gint64 made = g_get_monotonic_time() * 1000;
    for (int index = 0; index < packets; index++) {
        GstPadProbeInfo info = { 0 };
        info.type = GST_PAD_PROBE_TYPE_BUFFER;
        info.data = buffers[index];
        parley_gate_probe(NULL, &info, gate);
    }
    gint64 gated = g_get_monotonic_time() * 1000;
    for (int index = 0; index < packets; index++) gst_buffer_unref(buffers[index]);
    g_free(buffers);
    *making_ns = made - start;
    *gate_ns = gated - made;
    *passed = (gint64)gate->passed;
    g_object_unref(from_peer);
    g_object_unref(from_stranger);
    g_object_unref(peer);
    g_object_unref(other);
    parley_gate_release(gate);
    return 0;
}
