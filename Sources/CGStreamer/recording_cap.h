// The per-call cap on a recording's length (issue 48, `parleyd --max-recording`): a pad probe on the recording's
// audiorate (the call's timeline, silence in the gaps) that, once the audio it passed spans the cap, ends the file
// (an end of stream to wavenc, which completes the WAV header) and drops everything after it. The call goes on;
// only its recording stops. Nothing in GStreamer 1.22 ends one branch of a running pipeline after a duration, hence
// this hand-written check of each buffer's timestamps.
//
//   buffer [pts, pts + duration) ──► end − first pts ≤ cap? ──yes──► passed
//                                        │ no
//                                        ▼
//                 end of stream to wavenc (file completed), capped: every later buffer and event dropped

/// One recording's cap, shared (reference-counted) by its probe and the pipeline.
typedef struct {
    /// The longest recording, in nanoseconds of the timeline.
    GstClockTime limit;
    /// The first buffer's timestamp (GST_CLOCK_TIME_NONE until one came).
    GstClockTime first;
    /// Set once the cap was reached (read from other threads).
    gint capped;
} ParleyRecordingCap;

static GstPadProbeReturn parley_recording_cap_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    ParleyRecordingCap *cap = data;
    if (g_atomic_int_get(&cap->capped)) return GST_PAD_PROBE_DROP;
    if (!(info->type & GST_PAD_PROBE_TYPE_BUFFER)) return GST_PAD_PROBE_OK;
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    GstClockTime pts = GST_BUFFER_PTS(buffer);
    if (!GST_CLOCK_TIME_IS_VALID(pts)) return GST_PAD_PROBE_OK;
    if (!GST_CLOCK_TIME_IS_VALID(cap->first)) cap->first = pts;
    GstClockTime end = pts + (GST_BUFFER_DURATION_IS_VALID(buffer) ? GST_BUFFER_DURATION(buffer) : 0);
    if (end < cap->first || end - cap->first <= cap->limit) return GST_PAD_PROBE_OK;
    g_atomic_int_set(&cap->capped, 1);
    GstPad *peer = gst_pad_get_peer(pad);
    if (peer) {
        gst_pad_send_event(peer, gst_event_new_eos());
        gst_object_unref(peer);
    }
    return GST_PAD_PROBE_DROP;
}

/// Caps the recording made after the element `name` (the recording's audiorate) at `limit_ms` milliseconds of its
/// timeline, the cap kept on the pipeline under `key`; 0 on success.
static inline int parley_gst_cap_recording(GstElement *pipeline, const char *name, const char *key, gint64 limit_ms) {
    ParleyRecordingCap *cap = g_atomic_rc_box_new0(ParleyRecordingCap);
    cap->limit = (GstClockTime)(limit_ms < 0 ? 0 : limit_ms) * GST_MSECOND;
    cap->first = GST_CLOCK_TIME_NONE;
    return parley_gst_add_probe(pipeline, name, "src", GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
        parley_recording_cap_probe, cap, (GDestroyNotify)g_atomic_rc_box_release, key);
}

/// Whether the recording capped under `key` reached its cap (1), not yet (0), or has no cap (-1).
static inline int parley_gst_recording_capped(GstElement *pipeline, const char *key) {
    ParleyRecordingCap *cap = g_object_get_data(G_OBJECT(pipeline), key);
    return cap ? g_atomic_int_get(&cap->capped) : -1;
}
