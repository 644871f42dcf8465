// A call's video source as a bin of its own (issue 47, "Choosing a call's video source"): put into the pipeline in
// front of the element that takes pictures from it, and replaced there while the pipeline plays, so a new camera,
// test picture or file takes over without touching the rest (the encoder, the RTP session, DTLS, what is received).

/// Parses `description` (a source and what it needs) into a bin named "source" whose src pad is the element
/// `output`'s (only that one is ghosted: a decodebin's pads come later and link inside), and adds it to `pipeline`,
/// stopping and removing the "source" there before (the element `into` then has an unlinked sink). Not linked, not
/// started: set its elements' properties, then parley_gst_start_source. 0 on success; on failure -1 and `error_out`
/// (free with parley_gst_free) says why.
static inline int parley_gst_add_source(GstElement *pipeline, const char *description, const char *output, char **error_out) {
    GError *error = NULL;
    GstElement *bin = gst_parse_bin_from_description(description, FALSE, &error);
    if (!bin) {
        if (error_out) *error_out = g_strdup(error ? error->message : "the source did not parse");
        g_clear_error(&error);
        return -1;
    }
    g_clear_error(&error);
    GstElement *last = gst_bin_get_by_name(GST_BIN(bin), output);
    GstPad *inner = last ? gst_element_get_static_pad(last, "src") : NULL;
    GstPad *ghost = inner ? gst_ghost_pad_new("src", inner) : NULL;
    if (inner) gst_object_unref(inner);
    if (last) gst_object_unref(last);
    if (!ghost || !gst_element_add_pad(bin, ghost)) {
        if (error_out) *error_out = g_strdup_printf("the source has no %s to take pictures from", output);
        gst_object_unref(bin);
        return -1;
    }
    GstElement *old = gst_bin_get_by_name(GST_BIN(pipeline), "source");
    if (old) {
        // A source's streaming thread stops here (its push returns flushing); removing it unlinks it.
        gst_element_set_state(old, GST_STATE_NULL);
        gst_bin_remove(GST_BIN(pipeline), old);
        gst_object_unref(old);
    }
    gst_object_set_name(GST_OBJECT(bin), "source");
    if (!gst_bin_add(GST_BIN(pipeline), bin)) {
        if (error_out) *error_out = g_strdup("the source could not join the pipeline");
        return -1;
    }
    return 0;
}

/// The pipeline's running time now (ns), -1 when it has none (not playing).
static inline gint64 parley_gst_running_time(GstElement *pipeline) {
    GstClockTime now = gst_element_get_current_running_time(pipeline);
    return GST_CLOCK_TIME_IS_VALID(now) ? (gint64)now : -1;
}

/// Drops a source's end of stream (a file played out) where it leaves its bin: downstream it would end the RTP
/// session's stream (an RTCP BYE for our SSRC) and leave the chain unable to take the next source's pictures. The
/// picture simply stops; a call's end finishes its own way.
static GstPadProbeReturn parley_source_end_probe(GstPad *pad, GstPadProbeInfo *info, gpointer user) {
    (void)pad; (void)user;
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    return event && GST_EVENT_TYPE(event) == GST_EVENT_EOS ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

/// Links the "source" bin to the sink pad of the element `into` and starts it with the pipeline. With an
/// `offset_ns` of 0 or more, its timestamps (a file's, from zero) are moved by that much (the running time at the
/// swap). 0 on success; -1 when it does not link or does not start.
static inline int parley_gst_start_source(GstElement *pipeline, const char *into, gint64 offset_ns) {
    GstElement *bin = gst_bin_get_by_name(GST_BIN(pipeline), "source");
    GstElement *target = gst_bin_get_by_name(GST_BIN(pipeline), into);
    GstPad *src = bin ? gst_element_get_static_pad(bin, "src") : NULL;
    GstPad *sink = target ? gst_element_get_static_pad(target, "sink") : NULL;
    int linked = -1;
    if (src && sink) {
        if (offset_ns >= 0) gst_pad_set_offset(src, offset_ns);
        gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, parley_source_end_probe, NULL, NULL);
        linked = gst_pad_link(src, sink) == GST_PAD_LINK_OK ? 0 : -1;
        if (linked == 0 && !gst_element_sync_state_with_parent(bin)) linked = -1;
    }
    if (src) gst_object_unref(src);
    if (sink) gst_object_unref(sink);
    if (bin) gst_object_unref(bin);
    if (target) gst_object_unref(target);
    return linked;
}

/// Ends the stream at the sink pad of the element `name` (an end of stream sent into it from this thread): what
/// follows it finishes here and now (a muxer writes its last frames and the file sink its buffer) rather than when
/// the end of stream has made its way through a jitter buffer. 0 when the pad took it.
static inline int parley_gst_end_stream_at(GstElement *pipeline, const char *name) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!element) return -1;
    GstPad *pad = gst_element_get_static_pad(element, "sink");
    gst_object_unref(element);
    if (!pad) return -1;
    gboolean taken = gst_pad_send_event(pad, gst_event_new_eos());
    gst_object_unref(pad);
    return taken ? 0 : -1;
}
