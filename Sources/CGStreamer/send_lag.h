// How late a call's sending chain runs (issue 48's media load check, docs/media.md "Media admission"): a pad probe on
// the send valve compares each buffer's end with the pipeline's running time when the buffer gets there. A live
// source (a tone, silence, a device) makes a buffer once its period has passed, so in a machine that keeps up the
// difference is near zero; when the media threads wait for a core it grows, and with it the gaps every peer hears.
// GStreamer's own QoS messages come from sinks that sync, which ours (udpsink sync=false) do not, hence this probe.
//
//   buffer [pts, pts + duration) reaches the valve at running time t ──► lag = t − (pts + duration), worst kept
//   read (every 100 ms by the session) ──► the worst since the last reading, and from zero again

/// One pipeline's worst send lag since it was last read, in microseconds (read and written atomically).
typedef struct {
    guint worst_us;
} ParleySendLag;

static GstPadProbeReturn parley_send_lag_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    ParleySendLag *lag = data;
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    GstClockTime pts = GST_BUFFER_PTS(buffer);
    GstElement *element = GST_ELEMENT(GST_PAD_PARENT(pad));
    if (!GST_CLOCK_TIME_IS_VALID(pts) || !element) return GST_PAD_PROBE_OK;
    GstClockTime now = gst_element_get_current_running_time(element);
    GstClockTime end = pts + (GST_BUFFER_DURATION_IS_VALID(buffer) ? GST_BUFFER_DURATION(buffer) : 0);
    if (!GST_CLOCK_TIME_IS_VALID(now) || now <= end) return GST_PAD_PROBE_OK;
    guint late = (guint)MIN((now - end) / GST_USECOND, G_MAXUINT32);
    guint worst = g_atomic_int_get(&lag->worst_us);
    while (late > worst && !g_atomic_int_compare_and_exchange(&lag->worst_us, worst, late)) worst = g_atomic_int_get(&lag->worst_us);
    return GST_PAD_PROBE_OK;
}

/// Watches the lag of buffers reaching the element `name`'s sink pad, kept on the pipeline under `key`; 0 on success.
static inline int parley_gst_watch_send_lag(GstElement *pipeline, const char *name, const char *key) {
    return parley_gst_add_probe(pipeline, name, "sink", GST_PAD_PROBE_TYPE_BUFFER, parley_send_lag_probe,
        g_atomic_rc_box_new0(ParleySendLag), (GDestroyNotify)g_atomic_rc_box_release, key);
}

/// The worst send lag (µs) since the last reading, then zero again; 0 when nothing is watched.
static inline guint parley_gst_take_send_lag(GstElement *pipeline, const char *key) {
    ParleySendLag *lag = g_object_get_data(G_OBJECT(pipeline), key);
    return lag ? g_atomic_int_and(&lag->worst_us, 0) : 0;
}
