"""`Scripts/bench-media --video` (issue 47): the cost and the start of calls' video. Not a test: it prints numbers.

CPU: two parleyd carry N concurrent calls with video (640x480 at 30 fps VP8 of videotestsrc's moving ball each way,
decoded to a null sink; PCMU audio beside it) and the CPU both processes use per call is measured over a steady
window. The baseline, in the same run and for the same N, is N pairs of gst-launch-1.0 processes doing the same work
with GStreamer's plainest pipelines: the same picture and encoder settings through rtpbin, the partner's video
depayloaded and decoded, and the same audio. Target: at most 1.3x.

Upgrade to first frame: one audio call at a time is upgraded (`video` on), and the time from that request to the
first whole frame the caller receives from the callee (the time parleyd's frame probe logged: the re-INVITE, both
pipelines' start, the callee's first keyframe through RTP and the depayloader) is taken; the call is then
downgraded and the next upgrade timed. Target: p99 under 500 ms on loopback.
"""
import re
import signal
import subprocess
import time

from parley_bench import Parleyd, cpu_seconds, free_port, log, percentile, spawn

PICTURE = "width=640,height=480,framerate=30/1"
VP8 = ("vp8enc deadline=1 lag-in-frames=0 error-resilient=partitions keyframe-max-dist=60 target-bitrate=800000 "
       "end-usage=cbr buffer-size=1000 buffer-initial-size=500 buffer-optimal-size=600 overshoot=15 "
       "cpu-used=8 ! rtpvp8pay pt=96 picture-id-mode=15-bit")

GST_VIDEO_ENDPOINT = (
    "rtpbin name=rtp latency=200 "
    f"videotestsrc is-live=true pattern=ball ! videoconvert ! video/x-raw,format=I420,{PICTURE} ! {VP8} "
    "! rtp.send_rtp_sink_0 "
    "rtp.send_rtp_src_0 ! udpsink host=127.0.0.1 port={peer} sync=false async=false "
    "rtp.send_rtcp_src_0 ! udpsink host=127.0.0.1 port={peer_rtcp} sync=false async=false "
    "udpsrc port={port} caps=\"application/x-rtp,media=video,clock-rate=90000,encoding-name=VP8,payload=96\" "
    "! rtp.recv_rtp_sink_0 udpsrc port={port_rtcp} ! rtp.recv_rtcp_sink_0 "
    "rtp. ! rtpvp8depay ! vp8dec ! fakesink sync=false async=false "
    "rtpbin name=audio latency=60 "
    "audiotestsrc is-live=true wave=sine freq=1000 samplesperbuffer=160 ! audioconvert ! audioresample "
    "! audio/x-raw,rate=8000,channels=1 ! mulawenc ! rtppcmupay pt=0 ! audio.send_rtp_sink_0 "
    "audio.send_rtp_src_0 ! udpsink host=127.0.0.1 port={audio_peer} sync=false async=false "
    "udpsrc port={audio_port} caps=\"application/x-rtp,media=audio,clock-rate=8000,encoding-name=PCMU,payload=0\" "
    "! audio.recv_rtp_sink_0 audio. ! rtppcmudepay ! mulawdec ! fakesink sync=false async=false")


def video_parleyd(binary, workdir, name, ports, extra, log_level="error"):
    return Parleyd(binary, workdir, name, [
        "--media", "gstreamer", "--video", "--audio-source", "tone:1000", "--audio-sink", "null",
        "--video-source", "test:ball", "--video-sink", "null", "--rtp-ports", ports] + extra, log_level=log_level)


def wait_for_video(caller, conversations, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        carried = sum(1 for uuid in conversations
                      if caller.control.request("mediaStats", {"conversation": uuid}).get("video"))
        if carried == len(conversations):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {carried} of {len(conversations)} calls carry video after {timeout} s")
        time.sleep(0.2)


def parleyd_cpu(binary, workdir, calls, seconds, warmup):
    """CPU per call-second (ms) of N video calls between two parleyd, and the worst frame rate received."""
    callee = video_parleyd(binary, workdir, f"video-callee-{calls}", "20000-20999", ["--auto-answer", "0"])
    caller = video_parleyd(binary, workdir, f"video-caller-{calls}", "21000-21999", [])
    try:
        conversations = [caller.control.request("start", {"to": f"sip:parley@127.0.0.1:{callee.port}", "video": True})
                         ["conversation"]["uuid"] for _ in range(calls)]
        wait_for_video(caller, conversations)
        time.sleep(warmup)
        pids = [caller.process.pid, callee.process.pid]
        before, started = cpu_seconds(pids), time.monotonic()
        time.sleep(seconds)
        used, elapsed = cpu_seconds(pids) - before, time.monotonic() - started
        rates = []
        for uuid in conversations:
            stats = caller.control.request("mediaStats", {"conversation": uuid}).get("stats") or {}
            rates.append((stats.get("video") or {}).get("frameRateReceived", 0))
        for uuid in conversations:
            caller.control.request("end", {"conversation": uuid})
        return used / elapsed / calls * 1000, min(rates or [0])
    finally:
        caller.stop()
        callee.stop()


def baseline_cpu(calls, seconds, warmup):
    """CPU per call-second (ms) of N gst-launch-1.0 pairs doing what N video calls do."""
    processes = []
    try:
        for _ in range(calls):
            ports = []
            while len(ports) < 4:
                port = free_port(pair=True)
                if port not in ports:
                    ports.append(port)
            a, b, audio_a, audio_b = ports
            for port, peer, audio_port, audio_peer in ((a, b, audio_a, audio_b), (b, a, audio_b, audio_a)):
                description = GST_VIDEO_ENDPOINT.format(
                    peer=peer, peer_rtcp=peer + 1, port=port, port_rtcp=port + 1, audio_port=audio_port, audio_peer=audio_peer)
                processes.append(spawn(["gst-launch-1.0", "-q"] + description.split(" "),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(warmup + 1)
        if any(p.poll() is not None for p in processes):
            raise RuntimeError("a gst-launch-1.0 pipeline exited")
        pids = [p.pid for p in processes]
        before, started = cpu_seconds(pids), time.monotonic()
        time.sleep(seconds)
        used, elapsed = cpu_seconds(pids) - before, time.monotonic() - started
        return used / elapsed / calls * 1000
    finally:
        for process in processes:
            process.send_signal(signal.SIGINT)
        for process in processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


FIRST_FRAME = re.compile(r"video: the first frame arrived .* at ([0-9.]+)\)")


def upgrade_times(binary, workdir, count):
    """Per upgrade: from the `video` request to the first whole frame the caller receives (ms)."""
    callee = video_parleyd(binary, workdir, "upgrade-callee", "22000-22999", ["--auto-answer", "0"])
    caller = video_parleyd(binary, workdir, "upgrade-caller", "23000-23999", [], log_level="info")
    times, failures = [], 0
    try:
        uuid = caller.control.request("start", {"to": f"sip:parley@127.0.0.1:{callee.port}"})["conversation"]["uuid"]
        deadline = time.monotonic() + 10
        while not caller.control.request("mediaStats", {"conversation": uuid}).get("media"):
            if time.monotonic() > deadline:
                raise RuntimeError("the call carries no audio after 10 s")
            time.sleep(0.1)
        log_path = caller.log.name
        for _ in range(count):
            seen = len(FIRST_FRAME.findall(open(log_path).read()))
            asked = time.time()
            caller.control.request("video", {"conversation": uuid, "enabled": True})
            first = None
            deadline = time.monotonic() + 3
            while first is None and time.monotonic() < deadline:
                caller.log.flush()
                found = FIRST_FRAME.findall(open(log_path).read())
                if len(found) > seen:
                    first = float(found[-1])
                else:
                    time.sleep(0.01)
            if first is None:
                failures += 1
            else:
                times.append((first - asked) * 1000)
            caller.control.request("video", {"conversation": uuid, "enabled": False})
            time.sleep(0.3)
        caller.control.request("end", {"conversation": uuid})
        return times, failures
    finally:
        caller.stop()
        callee.stop()


def run(binary, workdir, ladder, seconds, warmup, upgrades):
    rows = []
    for calls in ladder:
        log(f"bench-media --video: {calls} concurrent video calls")
        parley, worst_rate = parleyd_cpu(binary, workdir, calls, seconds, warmup)
        base = baseline_cpu(calls, seconds, warmup)
        rows.append((calls, parley, base, worst_rate))
        print(f"video_calls={calls} parley_cpu_ms_per_call_s={parley:.1f} gst_launch_cpu_ms_per_call_s={base:.1f} "
              f"ratio={parley / base:.2f} worst_received_fps={worst_rate}", flush=True)
    log(f"bench-media --video: {upgrades} upgrades")
    times, failures = upgrade_times(binary, workdir, upgrades)
    p50, p99 = percentile(times, 0.5), percentile(times, 0.99)
    print(f"upgrade_to_first_frame_ms p50={p50:.0f} p99={p99:.0f} max={max(times or [0]):.0f} "
          f"upgrades={len(times)} failures={failures}", flush=True)
    print("\nsummary (BENCHMARKS.md):")
    for calls, parley, base, rate in rows:
        print(f"  {calls} video call(s) 640x480@30 VP8: {parley:.1f} ms CPU per call-second vs gst-launch pair "
              f"{base:.1f}: ratio {parley / base:.2f} (target <= 1.3); worst fps received {rate}")
    print(f"  upgrade to first frame: p50 {p50:.0f} ms, p99 {p99:.0f} ms over {len(times)} (target p99 < 500 ms); "
          f"{failures} without a frame in 3 s")
