// The desktop's audio devices (issue 49, docs/desktop.md "Devices"): what GstDeviceMonitor sees of Audio/Source
// and Audio/Sink now, each with the name its element's `device` property takes (pulsesrc/pulsesink), its display
// name, its class (PulseAudio's device.class: "sound", "monitor", "filter"…) and whether it is the default. Swift cannot walk a GList of GObjects comfortably: the list comes back as text.

/// A device monitor of the classes `first` and `second` (NULL: only `first`), started; NULL when it cannot start.
static inline GstDeviceMonitor *parley_started_device_monitor(const char *first, const char *second) {
    GstDeviceMonitor *monitor = gst_device_monitor_new();
    gst_device_monitor_add_filter(monitor, first, NULL);
    if (second) gst_device_monitor_add_filter(monitor, second, NULL);
    if (!gst_device_monitor_start(monitor)) {
        gst_object_unref(monitor);
        return NULL;
    }
    return monitor;
}

/// What the `device` property of the element `device` makes says (pulsesrc's server name, v4l2src's /dev/videoN),
/// NULL when its element has none; a g_malloc'd string.
static inline gchar *parley_device_id(GstDevice *device) {
    GstElement *element = gst_device_create_element(device, NULL);
    gchar *id = NULL;
    if (element && g_object_class_find_property(G_OBJECT_GET_CLASS(element), "device")) g_object_get(element, "device", &id, NULL);
    if (element) gst_object_unref(element);
    return id;
}

/// A device monitor of audio sources and sinks, started (a started one follows the server: its devices say which is
/// the default; one that only probes says none is); NULL when it cannot start. Kept for the process's life.
static inline GstDeviceMonitor *parley_audio_device_monitor(void) {
    return parley_started_device_monitor("Audio/Source", "Audio/Sink");
}

/// One line per device `monitor` knows now, "source|sink TAB default(0|1) TAB id TAB class TAB display name" (class
/// empty when the server says none), tabs and newlines in names turned into spaces; a malloc'd string (free with parley_gst_free), empty when there are none.
static inline char *parley_audio_devices(GstDeviceMonitor *monitor) {
    GList *devices = gst_device_monitor_get_devices(monitor);
    GString *out = g_string_new(NULL);
    for (GList *item = devices; item; item = item->next) {
        GstDevice *device = GST_DEVICE(item->data);
        gboolean source = gst_device_has_classes(device, "Audio/Source");
        GstStructure *properties = gst_device_get_properties(device);
        gboolean is_default = FALSE;
        if (properties) gst_structure_get_boolean(properties, "is-default", &is_default);
        gchar *id = parley_device_id(device);
        gchar *name = gst_device_get_display_name(device);
        const gchar *class = properties ? gst_structure_get_string(properties, "device.class") : NULL;
        gchar *kind = g_strdup(class ? class : "");
        if (id && name) {
            g_strdelimit(id, "\t\n\r", ' ');
            g_strdelimit(name, "\t\n\r", ' ');
            g_strdelimit(kind, "\t\n\r", ' ');
            g_string_append_printf(out, "%s\t%d\t%s\t%s\t%s\n", source ? "source" : "sink", is_default ? 1 : 0, id, kind, name);
        }
        g_free(kind);
        g_free(id);
        g_free(name);
        if (properties) gst_structure_free(properties);
    }
    g_list_free_full(devices, gst_object_unref);
    return g_string_free(out, FALSE);
}

// The cameras (issue 47, docs/media.md "Choosing a call's video source"): what GstDeviceMonitor sees of Video/Source,
// each with the device its element's `device` property takes (v4l2src: /dev/videoN) and its display name.

/// A device monitor of video sources, started; NULL when it cannot start (no provider). Kept for the process's life.
static inline GstDeviceMonitor *parley_video_device_monitor(void) {
    return parley_started_device_monitor("Video/Source", NULL);
}

/// One line per camera `monitor` knows now whose element takes a `device` (V4L2's), "id TAB display name", tabs and
/// newlines in names turned into spaces; a malloc'd string (free with parley_gst_free), empty when there are none.
static inline char *parley_video_devices(GstDeviceMonitor *monitor) {
    GList *devices = gst_device_monitor_get_devices(monitor);
    GString *out = g_string_new(NULL);
    for (GList *item = devices; item; item = item->next) {
        GstDevice *device = GST_DEVICE(item->data);
        gchar *id = parley_device_id(device);
        gchar *name = gst_device_get_display_name(device);
        if (id && name) {
            g_strdelimit(id, "\t\n\r", ' ');
            g_strdelimit(name, "\t\n\r", ' ');
            g_string_append_printf(out, "%s\t%s\n", id, name);
        }
        g_free(id);
        g_free(name);
    }
    g_list_free_full(devices, gst_object_unref);
    return g_string_free(out, FALSE);
}
