// Video frames counted where they pass (issue 47: a call's video figures): a pad probe on the encoder's source pad
// (frames sent) or the depayloader's (frames received, each buffer one whole frame), counting buffers, keyframes (no
// DELTA_UNIT flag) and bytes, and keeping the width and height of the caps last seen there.
//
//   buffer ──► frames += 1, bytes += size, keyframes += (not a delta unit)     caps ──► width, height
//   read (by the session, any thread) ──► the totals so far

/// One pad's frame counts (read and written atomically).
typedef struct {
    gint frames;
    gint keyframes;
    gint64 bytes;
    gint width;
    gint height;
    /// When the first frame passed (wall clock, µs since the epoch; 0 before).
    gint64 first_us;
} ParleyFrameCount;

static GstPadProbeReturn parley_frame_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    ParleyFrameCount *count = data;
    if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
        GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
        if (GST_EVENT_TYPE(event) == GST_EVENT_CAPS) {
            GstCaps *caps = NULL;
            gst_event_parse_caps(event, &caps);
            const GstStructure *structure = caps && gst_caps_get_size(caps) > 0 ? gst_caps_get_structure(caps, 0) : NULL;
            gint width = 0, height = 0;
            if (structure && gst_structure_get_int(structure, "width", &width) && gst_structure_get_int(structure, "height", &height)) {
                g_atomic_int_set(&count->width, width);
                g_atomic_int_set(&count->height, height);
            }
        }
        return GST_PAD_PROBE_OK;
    }
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    if (!buffer) return GST_PAD_PROBE_OK;
    if (g_atomic_int_add(&count->frames, 1) == 0) __atomic_store_n(&count->first_us, g_get_real_time(), __ATOMIC_RELAXED);
    if (!GST_BUFFER_FLAG_IS_SET(buffer, GST_BUFFER_FLAG_DELTA_UNIT)) g_atomic_int_inc(&count->keyframes);
    __atomic_fetch_add(&count->bytes, (gint64)gst_buffer_get_size(buffer), __ATOMIC_RELAXED);
    return GST_PAD_PROBE_OK;
}

/// Counts the frames leaving the element `name` (its `src` pad), kept on the pipeline under `key`; 0 on success.
static inline int parley_gst_count_frames(GstElement *pipeline, const char *name, const char *key) {
    return parley_gst_add_probe(pipeline, name, "src", GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
        parley_frame_probe, g_atomic_rc_box_new0(ParleyFrameCount), (GDestroyNotify)g_atomic_rc_box_release, key);
}

/// The counts kept under `key` into `out`; -1 when nothing is counted there.
static inline int parley_gst_read_frames(GstElement *pipeline, const char *key, ParleyFrameCount *out) {
    ParleyFrameCount *count = g_object_get_data(G_OBJECT(pipeline), key);
    if (!count) return -1;
    out->frames = g_atomic_int_get(&count->frames);
    out->keyframes = g_atomic_int_get(&count->keyframes);
    out->bytes = __atomic_load_n(&count->bytes, __ATOMIC_RELAXED);
    out->width = g_atomic_int_get(&count->width);
    out->height = g_atomic_int_get(&count->height);
    out->first_us = __atomic_load_n(&count->first_us, __ATOMIC_RELAXED);
    return 0;
}

/// Asks the encoder `name` for a keyframe now (the upstream GstForceKeyUnit event a PLI turns into, sent into its
/// source pad); 0 when it took it.
static inline int parley_gst_force_keyframe(GstElement *pipeline, const char *name) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    GstPad *pad = gst_element_get_static_pad(element, "src");
    gst_object_unref(element);
    if (!pad) return -1;
    GstStructure *structure = gst_structure_new("GstForceKeyUnit", "all-headers", G_TYPE_BOOLEAN, TRUE, NULL);
    gboolean taken = gst_pad_send_event(pad, gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM, structure));
    gst_object_unref(pad);
    return taken ? 0 : -1;
}
