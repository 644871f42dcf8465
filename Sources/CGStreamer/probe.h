// One pattern for every probe of ours (the receive gate, the send stop, the recording cap, the send lag, the arrivals
// watch): a pad probe on a named element whose state is reference-counted (a GLib atomic rc box), one reference held
// by the probe and one by the pipeline, kept there under a key for the readers, so either may go first.

/// Adds `probe` of `type` on the pad `pad_name` of the element `name`, with `state` (an atomic rc box whose
/// reference this takes for the probe; a second one, released by `release` too, is kept on the pipeline under `key`);
/// 0 on success, -1 when there is no such pad (the reference is released then).
static inline int parley_gst_add_probe(GstElement *pipeline, const char *name, const char *pad_name, GstPadProbeType type,
    GstPadProbeCallback probe, gpointer state, GDestroyNotify release, const char *key) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    GstPad *pad = element ? gst_element_get_static_pad(element, pad_name) : NULL;
    if (element) gst_object_unref(element);
    if (!pad) {
        release(state);
        return -1;
    }
    gst_pad_add_probe(pad, type, probe, state, release);
    gst_object_unref(pad);
    g_object_set_data_full(G_OBJECT(pipeline), key, g_atomic_rc_box_acquire(state), release);
    return 0;
}
